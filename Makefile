# Entry points for newcomers and CI. Every target installs what it needs first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
HOSTS ?= 2
# Which simulated lab the hosts-* targets act on (0: 10.0.18.0/24, the dev stack's).
LAB ?= 0
# How many simulated labs the end-to-end modules run on side by side.
LANES ?= 3
STACK ?= dev
# Every pulumi call runs with the project's toolchain and local state backend.
PULUMI := source toolchain/env.sh && pulumi
# Where the toolchain's sources are read from when something must be built (docs/toolchain.md,
# "Air-gapped install"); our team's machines hold a mirror beside the clone.
ifeq ($(origin DSLAB_SOURCE_MIRROR),undefined)
ifneq ($(wildcard ../shared/third_party/pulumi-docker),)
export DSLAB_SOURCE_MIRROR := $(abspath ../shared/third_party)
endif
endif

.PHONY: help venv dev-tools engine toolchain lab-images e2e-deps hosts-up hosts-down hosts-status demo demo-down demo-purge upgrade test test-unit test-properties test-e2e test-faults check bench

help:
	@echo "make demo        start 2 simulated hosts and run 'pulumi up' on the dev stack"
	@echo "make demo-down   'pulumi destroy' the dev stack and stop the simulator"
	@echo "make demo-purge  then remove the simulator's images, ~/.cache/dslab and the engine it started"
	@echo "make test        install everything and run the whole test suite: the fast tier, then e2e"
	@echo "make test-unit   the fast tier only (no engine needed, about a minute)"
	@echo "make test-properties  the plan's property tests, long: random edit sequences (under 10 min;"
	@echo "                 DSLAB_LONG=1 make test runs them after the fast tier)"
	@echo "make test-e2e    the end-to-end modules, side by side on LANES=$(LANES) simulated labs"
	@echo "make test-faults the fault, drift and secrets scenarios on the simulator (docs/reliability.md)"
	@echo "make bench       measure lifecycle and network on the simulator (bench/results.json; BENCH_ARGS=--help)"
	@echo "make upgrade     take over a stack an older version made (STACK=$(STACK)), before its first up"
	@echo "make toolchain   build or reuse the Pulumi CLI, language host and plugins"
	@echo "make lab-images  start this machine's Docker engine and build the simulator's images"
	@echo "make hosts-up    start the simulated hosts (HOSTS=$(HOSTS), LAB=$(LAB); BASTION=1: behind a bastion;"
	@echo "                 LINK=100mbit OPERATOR_LINK=50mbit: links limited); hosts-down, hosts-status"

venv: .venv/.installed

.venv/.installed: requirements.txt requirements-dev.txt
	python3 -m venv .venv
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

engine:
	bash simhosts/engine.sh

# Linters the tests run besides ruff and mypy (from the venv).
dev-tools:
	command -v shellcheck >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null)

toolchain: venv
	bash toolchain/install.sh

# The machine's engine and the simulator's images, what every lab's `up` needs first.
lab-images: venv
	$(PY) -m simhosts images

# What the end-to-end modules need. On a fresh machine the toolchain (Go builds: CPU) and the
# simulator's images (apt and debootstrap: mostly downloads) are built side by side; once cached,
# both take seconds.
e2e-deps: venv dev-tools
	@$(MAKE) --no-print-directory -j2 toolchain lab-images

hosts-up: venv
	$(PY) -m simhosts --lab $(LAB) up --hosts $(HOSTS) $(if $(BASTION),--bastion) $(if $(LINK),--link $(LINK)) $(if $(OPERATOR_LINK),--operator-link $(OPERATOR_LINK))

hosts-down: venv
	$(PY) -m simhosts --lab $(LAB) down

hosts-status: venv
	$(PY) -m simhosts --lab $(LAB) status

demo: toolchain hosts-up
	$(PY) -m components.validate Pulumi.$(STACK).yaml
	$(PULUMI) stack select --create $(STACK)
	@# --yes applies without asking, so the preview would only list the resources the update lists again.
	$(PULUMI) up --yes --skip-preview --suppress-progress --stack $(STACK)
	@echo
	@echo "Look around:  source toolchain/env.sh && pulumi stack output shell_command --stack $(STACK)"
	@echo "              ssh -F .simhosts/ssh_config server1 docker ps"
	@echo "Tear down:    make demo-down"

# A stack made by an older dslab (docs/upgrading.md), before its first `up`.
upgrade: venv toolchain
	source toolchain/env.sh && $(PY) assets/operator/forget-retired.py $(STACK)

demo-down: toolchain
	$(PULUMI) destroy --yes --stack $(STACK)
	$(PY) -m simhosts down

# After demo-down: the simulator's images, ~/.cache/dslab and the engine simhosts/engine.sh started.
demo-purge:
	bash simhosts/purge.sh

check: venv
	$(PY) -m ruff check .
	$(PY) -m mypy

# The fast tier: everything that needs no engine, one worker per core. `make test` stops here
# when it fails.
test-unit: venv dev-tools
	$(PY) -m pytest -m "not e2e" -n auto

# The end-to-end modules, whole, longest first, on LANES labs side by side (harness/lanes.py);
# each module's duration is printed at the end.
test-e2e: e2e-deps
	$(PY) -m harness.lanes --lanes $(LANES)

# The plan's property tests (tests/unit/test_plan_properties.py) with the long profile: random
# sequences of edits and host answers, where the fast tier runs a few fixed ones (docs/testing.md).
test-properties: venv
	HYPOTHESIS_PROFILE=nightly $(PY) -m pytest tests/unit/test_plan_properties.py

# DSLAB_LONG=1: the long property tests too, between the two tiers.
test: test-unit
ifeq ($(DSLAB_LONG),1)
	@$(MAKE) --no-print-directory test-properties
endif
	@$(MAKE) --no-print-directory test-e2e

test-faults: e2e-deps
	$(PY) -m harness.lanes --lanes $(LANES) -m faults

# Lab sizes and runs: BENCH_ARGS="--runs 3 --hosts 2,4,8 --only cold" (python -m bench --help).
bench: venv engine toolchain
	$(PY) -m pip install --quiet -r bench/requirements.txt
	$(PY) -m bench $(BENCH_ARGS)
