# The two commands a newcomer needs: `make run` (local mode) and `make test` (the whole suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv test unit lint openapi clean

venv: $(STAMP)

# torch first, by exact version: that is the CPU build; any other spec pulls CUDA wheels.
$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements-dev.txt
	touch $(STAMP)

test: venv
	$(PY) -m pytest -q

unit: venv
	$(PY) -m pytest -q tests/unit

lint: venv
	$(PY) -m ruff check lambdas stacks tests
	$(PY) -m ruff format --check lambdas stacks tests

openapi: venv
	$(PY) -m scripts.openapi > openapi.json
	@echo "wrote openapi.json"

clean:
	rm -rf $(VENV) .pytest_cache cdk.out
