# gputop: `make run` sets everything up and starts gputop on the built-in demo;
# `make test` sets everything up and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test setup system-packages lint typecheck bench soak screenshots demo clean

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
	# setuptools tells every editable install to mind same-named folders, as a warning; only that notice is
	# silenced (warnings about our metadata still show, and tests/test_packaging.py fails on them).
	$(PY) -W 'ignore:Editable installation:UserWarning' -m pip install -q -e '.[test]'
	@touch $@

lint: setup
	$(VENV)/bin/ruff check src core tui tests bench scripts
	$(VENV)/bin/ruff format --check src core tui tests bench scripts
	$(PY) scripts/lint_imports.py

typecheck: setup
	$(VENV)/bin/mypy

# Screenshots come only from driving the real app (never edited by hand).
screenshots: setup
	$(PY) scripts/screenshots.py screenshots/gputop-cpu.svg --device local-task --calls 30 --profile --engine-process
	$(PY) scripts/screenshots.py screenshots/gputop-cpu-80x24.svg --device local-task --calls 30 --profile --engine-process --size 80x24
	$(PY) scripts/screenshots.py screenshots/gputop-cpu-200x60.svg --device local-task --calls 30 --profile --engine-process --size 200x60
	$(PY) scripts/screenshots.py screenshots/gputop-timeline-cpu.svg --device local-task --calls 30 --profile --engine-process --press t
	$(PY) scripts/screenshots.py screenshots/gputop-roofline-cpu.svg --device local-task --calls 30 --profile --engine-process --roofline
	scripts/resnet50_screenshot.sh $(PY) screenshots/gputop-resnet50-cpu.svg
	$(PY) scripts/params_screenshot.py screenshots/gputop-params-cpu.svg --device local-task --mode streamed --cold
	$(PY) scripts/fleet_screenshot.py screenshots/gputop-fleet.svg
	$(PY) tests/programs/make_assets.py .screenshot-assets > /dev/null
	$(PY) scripts/screenshots.py screenshots/gputop-program-cpu.svg --calls 300 \
	  --program "$(PY) tests/programs/hold_results.py .screenshot-assets/model.vmfb .screenshot-assets/model.irpa 100000"

demo: setup
	GPUTOP=$(CURDIR)/$(VENV)/bin/gputop scripts/record_demo.sh screenshots/demo.cast

# The benchmarks that run on the CPU machine; results go to bench/results/.
bench: setup
	mkdir -p bench/results
	$(PY) bench/run_overhead.py --demo mlp --device local-task --iterations 100 --json bench/results/cpu-run_overhead.json
	$(PY) bench/run_overhead.py --demo mlp --device local-sync --iterations 100 --json bench/results/cpu-run_overhead-local-sync.json
	$(PY) bench/perturbation.py --target demo:mlp --device local-task --seconds 15 --rounds 3 --json bench/results/cpu-perturbation.json
	$(PY) bench/ui_lag.py --device local-task --seconds 20 --json bench/results/cpu-ui_lag.json
	$(PY) bench/profile_overhead.py --device local-task --rounds 5 --calls 100 --passes 3 --json bench/results/cpu-profile_overhead.json
	$(PY) bench/startup.py --device local-task --json bench/results/cpu-startup.json
	$(PY) bench/own_cost.py --device local-task --seconds 30 --json bench/results/cpu-own_cost.json
	$(PY) bench/params.py --device local-task --tensors 64 --gib 1 --cache warm,cold --reference --json bench/results/cpu-params.json

# 30 minutes flat out on local-task: RSS, samples lost, open files (BENCHMARKS.md).
soak: setup
	mkdir -p bench/results
	$(PY) bench/soak.py --minutes 30 --json bench/results/soak-local-task-$$(date +%Y-%m-%d).json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
