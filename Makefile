# InfoNCE Lab — `make repro` runs the default study, `make test` the test suite.
# Both install what they need first (`make setup`: a .venv with pinned packages, via pip).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# On PATH for DVC and the stages it starts (absolute: VENV may be given as one).
PATHBIN := $(abspath $(BIN))
STAMP := $(VENV)/.installed
# The stages run on the CPU with a fixed thread count unless told otherwise.
export OMP_NUM_THREADS ?= 2
export MKL_NUM_THREADS ?= 2
export DVC_NO_ANALYTICS := 1
export PYTHONHASHSEED := 0

.PHONY: setup browser sshd repro smoke test test-fast bench lint plots screenshot clean-venv

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 or run 'make PYTHON=/path/to/python3.11'"; exit 1; }
	@# torch's CUDA build makes the venv about 6.5 GB: say so before pip runs out of disk halfway
	@free=$$(df -Pk . | awk 'NR==2 {print int($$4 / 1048576)}'); [ "$$free" -ge 7 ] || \
	  echo "warning: $$free GiB free here; the .venv needs about 6.5 GiB (torch's CUDA build)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# Headless Chromium for tests/test_report_browser.py: Debian's chromium + chromium-driver, via
# apt-get as root; instant when both are there. Not root or no apt: a warning, and those tests
# skip (under CI they fail).
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium + chromium-driver (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends chromium chromium-driver >/dev/null; \
	else \
	  echo "warning: chromium/chromedriver missing and apt-get needs root: browser tests skip"; \
	fi

# OpenSSH's server for tests/devtools/test_real_remotes.py (the test starts its own sshd on
# 127.0.0.1 and needs no running service): Debian's openssh-server via apt-get as root;
# instant when sshd is there. Not root or no apt: a warning, and the SSH test skips (under CI it
# fails).
sshd:
	@if command -v sshd >/dev/null || [ -x /usr/sbin/sshd ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing openssh-server (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends openssh-server >/dev/null; \
	else \
	  echo "warning: sshd missing and apt-get needs root: the SSH remote test skips"; \
	fi

repro: setup
	$(BIN)/python -m infonce_lab.params params.yaml
	$(BIN)/python -m infonce_lab.devtools.dvc_plots
	$(BIN)/python -m infonce_lab.devtools.deps
	PATH="$(PATHBIN):$$PATH" $(BIN)/python -m infonce_lab.devtools.lock repro

# Every stage kind on profiles/tiny.yaml (≤ 5 minutes on 2 cores), in a temporary copy of the
# repository: this checkout's params.yaml and reports/ stay as they are. It prints the report's path.
smoke: setup
	$(BIN)/python -m infonce_lab.devtools.smoke

# Test files run on PYTEST_WORKERS processes (pytest-xdist), each file whole on one worker: the
# pipeline tests share one session fixture per file. PYTEST_WORKERS=0 runs them in this process.
# The log ends with the slowest tests and test files (the suite's budget, visible in CI).
PYTEST_WORKERS ?= 2
PYTEST = PATH="$(PATHBIN):$$PATH" $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile \
	--durations=10

test: browser sshd setup
	$(PYTEST)

test-fast: browser setup
	$(PYTEST) -m "not pipeline"

# BENCH_FLAGS=--quick: every section at tiny sizes (a check that it runs; measures nothing).
BENCH_FLAGS ?=
bench: setup
	PATH="$(PATHBIN):$$PATH" $(BIN)/python benchmarks/bench.py --out reports/bench.json $(BENCH_FLAGS)

# reports/dvc.yaml's top-level plots: from params.yaml's study, then `dvc plots show` (offline HTML).
plots: setup
	$(BIN)/python -m infonce_lab.devtools.dvc_plots
	$(BIN)/dvc plots show

# The README's picture of the report's first screen (1400 × 900), from the committed report.
screenshot: browser setup
	$(BIN)/python -m infonce_lab.devtools.browser reports/index.html docs/first-screen.png

lint: setup
	$(BIN)/ruff check src stages tests benchmarks

clean-venv:
	rm -rf $(VENV)
