# The two set-up commands of the README are `make figures` and `make test`;
# each creates .venv and installs mcdp into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DRAWS  ?= 1e7
# test workers (pytest-xdist): one per logical core, at most MAXJOBS; JOBS=0 runs
# the tests in this process
JOBS    ?= logical
MAXJOBS ?= 8
PYTEST  := $(BIN)/python -m pytest -n $(JOBS) --maxprocesses=$(MAXJOBS)

.PHONY: install install-gpu install-libs test test-slow test-all test-libs lint figures grid bench libraries clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# JAX's CUDA wheels into the same .venv: every command then runs on the GPU
install-gpu: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,cuda]'

# the audited DP libraries, pinned (the extra audit-libs), into the same .venv
install-libs: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,audit-libs]'

test: $(STAMP)
	$(PYTEST)

test-slow: $(STAMP)
	$(PYTEST) -m slow tests

test-all: $(STAMP)
	$(PYTEST) -m '' tests README.md

# the audits of DP libraries (slow ones included), with the libraries installed
test-libs: install-libs
	$(PYTEST) -m audit_libs tests

lint: $(STAMP)
	$(BIN)/ruff format --check mcdp tests benchmarks
	$(BIN)/ruff check mcdp tests benchmarks

figures: $(STAMP)
	$(BIN)/mcdp figures

grid: $(STAMP)
	$(BIN)/mcdp grid acl2022 --draws $(DRAWS) --out results/acl2022.json

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py --json benchmarks/results/engine.json
	$(BIN)/python benchmarks/bench_memory.py --json benchmarks/results/memory.json
	$(BIN)/python benchmarks/bench_prng.py --json benchmarks/results/prng.json
	$(BIN)/python benchmarks/bench_cluster.py --json benchmarks/results/cluster.json
	$(BIN)/python benchmarks/profile_sampler.py --dim 8

# the README's table of library functions called on datasets
libraries: install-libs
	$(BIN)/python benchmarks/bench_libraries.py --json benchmarks/results/libraries.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
