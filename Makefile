# The two set-up commands of the README are `make figures` and `make test`;
# each creates .venv and installs mcdp into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DRAWS  ?= 1e7

.PHONY: install install-gpu test test-slow test-all lint figures grid bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# JAX's CUDA wheels into the same .venv: every command then runs on the GPU
install-gpu: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,cuda]'

test: $(STAMP)
	$(BIN)/python -m pytest

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow tests

test-all: $(STAMP)
	$(BIN)/python -m pytest -m '' tests README.md

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

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
