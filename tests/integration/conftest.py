"""The API and a worker on real services (Postgres, Redis, S3: tests/services.py), shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.stack import Stack, production_env, running_api

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def services_stack(
    pg_url: str,
    redis_url: str,
    s3: dict[str, str],
    catalog_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
    logs_dir: Path,
) -> Iterator[Stack]:
    env = production_env(pg_url, redis_url, s3, catalog_dir, tmp_path_factory.mktemp("state"))
    with running_api(env, logs_dir) as stack:
        yield stack


@pytest.fixture
def api(services_stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=services_stack.url, timeout=30) as c:
        yield c


@pytest.fixture
def worker(services_stack: Stack) -> Stack:
    if services_stack.worker is None:
        services_stack.start_worker()
    return services_stack
