"""Fixtures for real services: a fresh Postgres database, a Redis db, a moto S3 server, the API and a worker.

Postgres and Redis are the machine's (``make test`` starts them when they are down); the URLs can be pointed
elsewhere with RFT_TEST_PG and RFT_TEST_REDIS.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import migrate
from tests.integration.stack import Stack, moto_s3, production_env

PG = os.environ.get("RFT_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
REDIS = os.environ.get("RFT_TEST_REDIS", "redis://127.0.0.1:6379")

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A database of its own for this test session, schema by ``alembic upgrade head``."""
    import psycopg

    name = f"rft_it_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{PG.replace('postgresql://', 'postgresql+psycopg://')}/{name}"
    migrate(url)
    yield url
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    db = 1 + secrets.randbelow(15)
    url = f"{REDIS}/{db}"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="session")
def s3(logs_dir: Path) -> Iterator[dict[str, str]]:
    import boto3

    with moto_s3(logs_dir) as endpoint:
        creds = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
        boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
        ).create_bucket(Bucket="rft-it")
        yield {"S3_ENDPOINT_URL": endpoint, "S3_BUCKET": "rft-it", **creds}


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
    stack = Stack(env, logs_dir)
    stack.start_api()
    yield stack
    stack.stop()


@pytest.fixture
def api(services_stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=services_stack.url, timeout=30) as c:
        yield c


@pytest.fixture
def worker(services_stack: Stack) -> Stack:
    if services_stack.worker is None:
        services_stack.start_worker()
    return services_stack
