from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_model import TINY_ID, build_tiny_model

# Postgres, Redis and S3 fixtures for tests/integration and tests/browser, and the demo job served by vLLM (each
# made only when a test asks for it)
pytest_plugins = ["tests.services", "tests.inference_stack"]


@pytest.fixture(scope="session")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model catalog holding the tiny random model (built once per test session, no download)."""
    root = tmp_path_factory.mktemp("models")
    build_tiny_model(root)
    return root


@pytest.fixture(scope="session")
def tiny_model_dir(catalog_dir: Path) -> Path:
    return catalog_dir / TINY_ID
