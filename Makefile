# The book in two commands (README, "Quick start"):
#
#   make book   a virtual environment in .venv with the package and its tools, then the
#               site built in _build/html (every chapter executed once; warnings are errors)
#   make test   the same, Debian's Chromium if missing, then pytest against that build:
#               unit tests, the build's claim records and the browser test
#
# BNN_PROFILE defaults to quick; BNN_POSTERIORS_DATA (a local copy of the data) is
# honoured when set. `pytest book` (opt-in) executes the chapters again under nbval.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

VENV := .venv
STAMP := $(VENV)/.installed
BIN := $(CURDIR)/$(VENV)/bin

BNN_PROFILE ?= quick
# Compiled XLA programs are kept on disk, shared by the chapters' kernels and read again by
# the second execution of chapter 3 in the tests. Every program is kept (JAX's default keeps
# only those that took a second or more to compile): a program compiled again, by a new
# jitted closure or another chapter, is then read instead; benchmarks/compilation_cache.py
# measures both settings side by side and checks that the claim values stay the same.
JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/_build/jax_cache
JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
export BNN_PROFILE JAX_COMPILATION_CACHE_DIR JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS
# the kernels and the tests' subprocesses find the environment's tools first
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
export PATH := $(BIN):$(PATH)

.PHONY: book test install browser lint

# The chapters are executed side by side first (bnn_posteriors.site.execute: one kernel per
# process, $(BNN_EXECUTE_PROCESSES) at a time, into the build's notebook cache); the build then
# finds each one cached and executes again only a chapter that failed, to report its error.
BNN_EXECUTE_PROCESSES ?= 2
export BNN_EXECUTE_PROCESSES

book: $(STAMP)
	@s=$$(date +%s); $(BIN)/python -m bnn_posteriors.site.execute; \
	  echo "== chapters executed in $$(( $$(date +%s) - s )) s"
	@s=$$(date +%s); $(BIN)/jupyter-book build . --warningiserror --keep-going; \
	  echo "== book built in $$(( $$(date +%s) - s )) s"

# pytest in $(PYTEST_WORKERS) processes (pytest-xdist; one test file per worker at a time)
PYTEST_WORKERS ?= 2

test: book browser
	@s=$$(date +%s); BNN_SITE_PREBUILT=1 $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=25; \
	  echo "== pytest took $$(( $$(date +%s) - s )) s"

install: $(STAMP)

# The hooks of .pre-commit-config.yaml on every tracked file: ruff and ruff format on the
# package, tests and scripts, mypy on src/ ([tool.mypy] in pyproject.toml), then ruff on the
# chapters' code cells (scripts/lint_chapters.sh). `$(BIN)/pre-commit install` runs the same
# hooks on each commit's files.
lint: $(STAMP)
	$(BIN)/pre-commit run --all-files

$(BIN)/python:
	python3 -m venv $(VENV)

# (re)installed when missing or older than pyproject.toml
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

# the browser test drives Debian's Chromium and ChromeDriver
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  echo "installing chromium and chromium-driver with apt-get"; \
	  $$SUDO apt-get update -qq; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    chromium chromium-driver >/dev/null; \
	fi
