# Entry points for newcomers and CI. Every target installs what it needs first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
HOSTS ?= 2

.PHONY: help venv toolchain lab-up lab-down lab-status demo test test-unit test-e2e test-faults bench

help:
	@echo "make demo        start the 2-host simulated lab and run 'pulumi up' on the dev stack"
	@echo "make test        install everything and run the whole test suite (unit and e2e)"
	@echo "make toolchain   build or reuse the Pulumi CLI, language host and plugins"
	@echo "make lab-up      start the simulated lab (HOSTS=$(HOSTS)); lab-down, lab-status"

venv: .venv/.installed

.venv/.installed: requirements.txt requirements-dev.txt
	python3 -m venv .venv
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

toolchain: venv
	bash toolchain/install.sh

lab-up: venv
	$(PY) -m lab up --hosts $(HOSTS)

lab-down: venv
	$(PY) -m lab down

lab-status: venv
	$(PY) -m lab status
