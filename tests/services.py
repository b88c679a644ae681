"""Real backing services for the integration and browser tests (a pytest plugin, see tests/conftest.py): a fresh
Postgres database, a Redis db, a moto S3 server. Each is made only when a test asks for it.

Postgres and Redis are the machine's (``make test`` starts them when they are down); the URLs can be pointed
elsewhere with RFT_TEST_PG and RFT_TEST_REDIS.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import migrate
from tests.integration.stack import moto_s3

PG = os.environ.get("RFT_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
REDIS = os.environ.get("RFT_TEST_REDIS", "redis://127.0.0.1:6379")


@pytest.fixture(scope="session")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


@contextmanager
def fresh_database() -> Iterator[str]:
    """A Postgres database of its own, schema by ``alembic upgrade head``; dropped afterwards."""
    import psycopg

    name = f"rft_it_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{PG.replace('postgresql://', 'postgresql+psycopg://')}/{name}"
    try:
        migrate(url)
        yield url
    finally:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_taken_redis_dbs: set[int] = set()


def fresh_redis_db() -> str:
    """An emptied Redis database (1-15) that no other stack of this test session uses: each stack's broker queue
    is its own, so one stack's workers never take another's jobs."""
    import redis

    db = secrets.choice([d for d in range(1, 16) if d not in _taken_redis_dbs])
    _taken_redis_dbs.add(db)
    url = f"{REDIS}/{db}"
    redis.Redis.from_url(url).flushdb()
    return url


@contextmanager
def leased_redis_db() -> Iterator[str]:
    """``fresh_redis_db`` for as long as a stack runs: the database goes back to the pool when the block ends (its
    workers stopped), since Redis has 15 of them and a whole test session starts more stacks than that."""
    url = fresh_redis_db()
    try:
        yield url
    finally:
        _taken_redis_dbs.discard(int(url.rsplit("/", 1)[1]))


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    with fresh_database() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> str:
    return fresh_redis_db()


@pytest.fixture(scope="session")
def s3(logs_dir: Path) -> Iterator[dict[str, str]]:
    import boto3

    with moto_s3(logs_dir) as endpoint:
        creds = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
        boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
        ).create_bucket(Bucket="rft-it")
        yield {"S3_ENDPOINT_URL": endpoint, "S3_BUCKET": "rft-it", **creds}
