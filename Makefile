# gputop: `make run` sets everything up and starts gputop on the built-in demo;
# `make test` sets everything up and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test setup system-packages lint typecheck bench screenshots demo clean

run: setup
	$(VENV)/bin/gputop

test: setup
	$(PY) -m pytest

setup: system-packages $(STAMP)

system-packages:
	@scripts/system-packages.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

lint: setup
	$(VENV)/bin/ruff check core tui tests bench scripts
	$(VENV)/bin/ruff format --check core tui tests bench scripts
	$(VENV)/bin/lint-imports

typecheck: setup
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
