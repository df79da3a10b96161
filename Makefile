# InfoNCE Lab — `make repro` runs the default study, `make test` the test suite.
# Both install what they need first (`make setup`: a .venv with pinned packages, via pip).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The stages run on the CPU with a fixed thread count unless told otherwise.
export OMP_NUM_THREADS ?= 2
export MKL_NUM_THREADS ?= 2
export HF_HUB_OFFLINE := 1
export DVC_NO_ANALYTICS := 1
export PYTHONHASHSEED := 0

.PHONY: setup repro test test-fast bench lint clean-venv

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 or run 'make PYTHON=/path/to/python3.11'"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

repro: setup
	$(BIN)/python -m infonce_lab.config params.yaml
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

test: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest

test-fast: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -m "not pipeline"

bench: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/bench.py --out reports/bench.json

lint: setup
	$(BIN)/ruff check src stages tests benchmarks

clean-venv:
	rm -rf $(VENV)
