"""API fixtures of the unit tests: ApiSettings on a fresh SQLite schema built by Alembic, and a TestClient.

A test module changes the settings by defining its own ``settings_overrides`` fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from api.main import create_app
from tests.helpers import migrate


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {}


@pytest.fixture
def settings(tmp_path: Path, catalog_dir: Path, settings_overrides: dict[str, Any]) -> ApiSettings:
    s = ApiSettings(
        state_dir=tmp_path / "state", model_catalog_dir=catalog_dir, worker_token="t0k", **settings_overrides
    )
    migrate(s.db_url)
    return s


@pytest.fixture
def client(settings: ApiSettings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c
