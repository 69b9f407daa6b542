# The two commands a newcomer needs: `make run` (local mode) and `make test` (the whole suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Material for MkDocs and a plugin it loads each print a notice about MkDocs 2.0 on every build
# (this site pins MkDocs 1.6); one variable silences each.
export DISABLE_MKDOCS_2_WARNING := true
export NO_MKDOCS_2_WARNING := 1

.PHONY: venv node tools test unit lint docs openapi synth cost capacity bootstrap deploy destroy smoke asset-size run chat ingest redrive migrate-memory bench clean

venv: $(STAMP)

# torch first, by exact version: that is the CPU build; any other spec pulls CUDA wheels.
# Then the project itself, editable (see pyproject.toml), so its packages import from anywhere;
# setuptools' warning that folders named like the packages may shadow them is moot: they are them.
# Last the Python client (clients/python, a package of its own), editable with every extra; its
# build backend, hatchling, is pinned in requirements-dev.txt, so no build environment is fetched.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml clients/python/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements-dev.txt
	PYTHONWARNINGS="ignore:Editable installation" $(PIP) install -q --no-deps -e .
	$(PIP) install -q --no-build-isolation -e './clients/python[langchain,langgraph,mcp,iam]'
	touch $(STAMP)

# Node.js tools: the CDK CLI and DynamoDB Local (a jar, run with java).
node: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20+ with npm is needed: https://nodejs.org (or apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# Everything the whole suite needs: Python and Node dependencies, Java, a headless Chromium.
tools: venv node
	@command -v java >/dev/null || { echo "Java 17+ is needed for DynamoDB Local (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@$(PY) -m scripts.browser

# Two pytest-xdist workers: a module's tests stay on one worker and the synthesizing modules
# share one (tests/conftest.py). `make test PYTEST_WORKERS=` runs the suite in one process.
PYTEST_WORKERS ?= -n 2 --dist loadfile

# The client must build as a wheel (into a temporary directory: this checks, it ships nothing).
test: tools synth lint
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PIP) wheel --no-deps --no-build-isolation -q -w "$$tmp" ./clients/python && \
	echo "built $$(basename "$$tmp"/*.whl)"
	$(PY) -m pytest -q $(PYTEST_WORKERS)

unit: venv
	$(PY) -m pytest -q tests/unit

lint: venv
	$(PY) -m ruff check lambdas stacks tests local bench scripts app.py clients
	$(PY) -m ruff format --check lambdas stacks tests local bench scripts app.py clients
	$(PY) -m mypy lambdas stacks
	$(PY) -m mypy --python-version 3.10 clients/python/chatmemory_client

# The docs site (mkdocs.yml, docs/) on http://127.0.0.1:8002, rebuilt on every change
# (ARGS="--dev-addr 127.0.0.1:9002" for another port). `make test` builds it with --strict
# (tests/docs/test_docs_site.py) and runs its code blocks (tests/docs/test_docs_code_blocks.py).
docs: venv node
	$(PY) -m mkdocs serve --dev-addr 127.0.0.1:8002 $(ARGS)

# Written whole or not at all: tests and a running gateway read it meanwhile.
openapi: venv
	$(PY) -m scripts.openapi > openapi.json.tmp || { rm -f openapi.json.tmp; exit 1; }
	mv openapi.json.tmp openapi.json
	$(PY) -m scripts.page_schema > local/web/schema.js
	@echo "wrote openapi.json and local/web/schema.js"

# CloudFormation templates into cdk.out/, with no AWS account and no Docker: the Lambda asset is
# bundled by pip on this machine, cdk-nag checks every synth. No notices or telemetry calls.
CDK := npx cdk --no-notices --no-version-reporting

synth: venv node
	$(CDK) synth --quiet

# What each documented configuration bills while idle and per 1,000 chat turns: synthesized
# in-process (no AWS account, no Docker) and priced from scripts/cost/prices.toml. The last line
# is JSON. `make cost ARGS=--docs` also rewrites the cost section of docs/cost.md.
cost: venv node
	$(PY) -m scripts.cost $(ARGS)

# Every component's peak rate at 10k, 1M and 10M daily users and the first limit each meets,
# from what the AWS contract scenario measured (scripts/capacity/measured.json; ARGS=--measure
# measures it again, ARGS=--docs rewrites the tables in docs/cost.md and bench/RESULTS.md).
capacity: venv
	$(PY) -m scripts.capacity $(ARGS)

# Deploy to the account and region of your AWS credentials (run `make bootstrap` once per
# account/region). Settings: CDK_ARGS="-c chatmemory:stage=prod -c chatmemory:textProvider=bedrock
# -c chatmemory:embedProvider=bedrock".
bootstrap: venv node
	$(CDK) bootstrap $(CDK_ARGS)

deploy: venv node
	$(CDK) deploy $(CDK_ARGS)

destroy: venv node
	$(CDK) destroy $(CDK_ARGS)

# Every route and stream path of a deployed stack, checked end to end with two temporary Cognito
# users (your AWS credentials; see scripts/smoke.py): make smoke STACK=ChatMemory-dev. Against
# local mode: make smoke URL=http://127.0.0.1:8000 (with make run going in another terminal).
STACK ?= ChatMemory-dev
smoke: venv
	$(PY) -m scripts.smoke $(if $(URL),--url $(URL),--stack $(STACK)) $(ARGS)

# Zipped size of the Lambda asset that `make synth` bundled, and what takes the space.
asset-size: synth
	$(PY) -m scripts.asset_size

# Local mode: DynamoDB Local, the stream poller and the API with its web page on :8000
# (options after ARGS=, e.g. make run ARGS="--port 9000"; make chat ARGS="--user bob").
run: venv node
	@command -v java >/dev/null || { echo "Java 17+ is needed for DynamoDB Local (apt-get install openjdk-17-jre-headless)"; exit 1; }
	$(PY) -m local.run $(ARGS)

# A terminal chat against the running local API.
chat: venv
	$(PY) -m local.chat $(ARGS)

# Load verified documents (.md, .txt under DIR) into the local long-term index.
ingest: venv
	@test -n "$(DIR)" || { echo "usage: make ingest DIR=path/to/documents"; exit 2; }
	$(PY) -m local.ingest "$(DIR)"

# Re-run consolidation of FAILED sessions (local mode; in AWS see docs/operations.md).
redrive: venv
	$(PY) -m local.redrive

# Copy a deployed stack's old memory index into the current ones: S3 Vectors' shared index into
# per-user indexes, or a domain's previous generation (searchMigrateMemoryFrom) into the new one
# (your AWS credentials; resumable: run it again after a failure).
# make migrate-memory STACK=ChatMemory-dev
migrate-memory: venv
	$(PY) -m scripts.migrate_memory --stack $(STACK)

bench: tools synth
	$(PY) -m bench.all

clean:
	rm -rf $(VENV) node_modules .pytest_cache cdk.out *.egg-info
