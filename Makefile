# `make demo` and `make test` set everything up by themselves on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# One BLAS thread: on shared 2-core machines OpenBLAS with 2 threads is 10-100x slower.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

BACKENDS_STAMP := $(VENV)/.backends-installed

.PHONY: setup system-deps backends demo test wheel-check lint format bench clean

setup: system-deps $(STAMP)

system-deps:
	@tools/install_system_deps.sh

$(STAMP): pyproject.toml requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

# The optional P10 backends (array-api-strict, PyTorch CPU, Dask): the test suite sweeps them.
backends: $(BACKENDS_STAMP)

$(BACKENDS_STAMP): $(STAMP) requirements-backends.txt
	$(PY) -m pip install --quiet -r requirements-backends.txt
	@touch $(BACKENDS_STAMP)

# The main job: train the MLP example under capture, then serve the viewer on its run
# (http://127.0.0.1:8000; Ctrl-C stops). PORT=0 picks a free port.
PORT ?= 8000
demo: setup
	$(VENV)/bin/tpx-inspect demo --port $(PORT)

# Build the wheel, install it with only its declared dependencies into a fresh venv under
# build/wheel-check, and run the installed tpx-inspect (help, run, export, serve, demo).
wheel-check: setup
	PYTHON=$(PY) tools/check_wheel.sh

test: setup backends wheel-check
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: setup
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: setup
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
