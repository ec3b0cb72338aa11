# Entry points for newcomers and CI. Every target installs what it needs first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
HOSTS ?= 2
STACK ?= dev
# Every pulumi call runs with the project's toolchain and local state backend.
PULUMI := source toolchain/env.sh && pulumi
# Where the toolchain's sources are read from when something must be built (README,
# "Air-gapped install"); our team's machines hold a mirror beside the clone.
ifeq ($(origin DSLAB_SOURCE_MIRROR),undefined)
ifneq ($(wildcard ../shared/third_party/pulumi-docker),)
export DSLAB_SOURCE_MIRROR := $(abspath ../shared/third_party)
endif
endif

.PHONY: help venv dev-tools engine toolchain lab-up lab-down lab-status demo demo-down demo-purge test test-unit test-e2e test-faults check bench

help:
	@echo "make demo        start the 2-host simulated lab and run 'pulumi up' on the dev stack"
	@echo "make demo-down   'pulumi destroy' the dev stack and stop the lab"
	@echo "make demo-purge  then remove the lab's images, ~/.cache/dslab and the engine it started"
	@echo "make test        install everything and run the whole test suite (unit and e2e)"
	@echo "make test-unit   the fast tests only (no engine needed)"
	@echo "make test-faults the fault, drift and secrets scenarios on the lab (docs/reliability.md)"
	@echo "make bench       measure lifecycle and network on the lab (bench/results.json; BENCH_ARGS=--help)"
	@echo "make toolchain   build or reuse the Pulumi CLI, language host and plugins"
	@echo "make lab-up      start the simulated lab (HOSTS=$(HOSTS)); lab-down, lab-status"

venv: .venv/.installed

.venv/.installed: requirements.txt requirements-dev.txt
	python3 -m venv .venv
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

engine:
	bash lab/engine.sh

# Linters the tests run besides ruff and mypy (from the venv).
dev-tools:
	command -v shellcheck >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null)

toolchain: venv
	bash toolchain/install.sh

lab-up: venv
	$(PY) -m lab up --hosts $(HOSTS)

lab-down: venv
	$(PY) -m lab down

lab-status: venv
	$(PY) -m lab status

demo: toolchain lab-up
	$(PY) -m components.validate Pulumi.$(STACK).yaml
	$(PULUMI) stack select --create $(STACK)
	$(PULUMI) up --yes --stack $(STACK)
	@$(PULUMI) stack output --stack $(STACK)
	@echo
	@echo "Look around:  source toolchain/env.sh && pulumi stack output shell_command --stack $(STACK)"
	@echo "              ssh -F .lab/ssh_config server1 docker ps"
	@echo "Tear down:    make demo-down"

demo-down: toolchain
	$(PULUMI) destroy --yes --stack $(STACK)
	$(PY) -m lab down

# After demo-down: the lab's images, ~/.cache/dslab and the engine lab/engine.sh started.
demo-purge:
	bash lab/purge.sh

check: venv
	$(PY) -m ruff check .
	$(PY) -m mypy

test-unit: venv
	$(PY) -m pytest -m "not e2e"

test: venv dev-tools engine toolchain
	$(PY) -m pytest

test-faults: venv engine toolchain
	$(PY) -m pytest -m faults

# Lab sizes and runs: BENCH_ARGS="--runs 3 --hosts 2,4,8 --only cold" (python -m bench --help).
bench: venv engine toolchain
	$(PY) -m pip install --quiet -r bench/requirements.txt
	$(PY) -m bench $(BENCH_ARGS)
