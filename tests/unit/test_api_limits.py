"""Limits: the per-key rate limit (429 + Retry-After) and the per-project quota of unfinished jobs.

With Redis and two API processes: tests/integration/test_shared_limits.py."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from api.core.ratelimit import RateLimiter, RedisRateLimiter, make_limiter
from api.core.settings import ApiSettings
from api.db.locks import hold_project_lock
from api.db.models import DEFAULT_PROJECT
from api.db.session import make_engine
from scripts.local_stack import free_port
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"rate_limit_per_minute": 5, "max_active_jobs_per_project": 1}


def test_rate_limit_answers_429_with_retry_after(client: TestClient, settings: ApiSettings) -> None:
    codes = [client.get("/v1/models").status_code for _ in range(7)]
    assert codes[:5] == [200] * 5 and codes[5] == 429
    r = client.get("/v1/models")
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
    assert r.json()["error"]["code"] == "rate_limited" and "5 per minute" in r.json()["error"]["message"]
    assert client.get("/healthz").status_code == 200  # probes are not limited


def test_project_job_quota(client: TestClient, settings: ApiSettings) -> None:
    fid = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    body = job_body(TINY_ID, fid.json()["id"])
    assert client.post("/v1/fine_tuning/jobs", json=body).status_code == 201
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 429 and r.json()["error"]["code"] == "quota_exceeded"
    assert "the quota is 1" in r.json()["error"]["message"]


def test_the_rate_limit_shares_a_redis_broker_unless_told_otherwise(tmp_path: Path) -> None:
    def where(**kw: Any) -> str | None:
        return ApiSettings(state_dir=tmp_path, **kw).rate_limit_redis

    assert where() is None  # embedded: buckets in the process
    assert where(broker_url="redis://h:6379/0") == "redis://h:6379/0"
    assert where(broker_url="rediss://h:6380/0") == "rediss://h:6380/0"
    assert where(broker_url="amqp://h//") is None
    assert where(broker_url="amqp://h//", rate_limit_redis_url="redis://r/2") == "redis://r/2"
    assert where(broker_url="redis://h:6379/0", rate_limit_redis_url="off") is None
    assert isinstance(make_limiter(10, None), RateLimiter) and make_limiter(0, "redis://h") is None
    assert isinstance(make_limiter(10, "redis://h"), RedisRateLimiter)


def test_an_unreachable_redis_fails_open_to_a_bucket_per_process(caplog: pytest.LogCaptureFixture) -> None:
    limiter = RedisRateLimiter(f"redis://127.0.0.1:{free_port()}/0", 2, retry_after=60)  # nothing listens there

    async def takes() -> list[float]:
        try:
            return [await limiter.acquire("k") for _ in range(3)] + [await limiter.acquire("other")]
        finally:
            await limiter.aclose()

    with caplog.at_level(logging.WARNING, logger="api.core.ratelimit"):
        waits = asyncio.run(takes())
    assert waits[:2] == [0.0, 0.0] and 29 < waits[2] <= 30 and waits[3] == 0.0  # 2/min: a token per 30 s
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "limiting per API process" in warnings[0]  # once, not once per request


def test_the_project_lock_serialises_sqlite_writers(settings: ApiSettings) -> None:
    """pysqlite reads outside a transaction until the first write, so without the lock two creations could both
    count below the quota; with it the second waits for the first commit (api.db.locks)."""
    engine = make_engine(settings.db_url)
    order: list[str] = []
    locked = threading.Event()

    def second() -> None:
        with Session(engine) as s:
            locked.wait()
            hold_project_lock(s, "job-quota", DEFAULT_PROJECT)
            order.append("second locked")
            s.commit()

    thread = threading.Thread(target=second)
    thread.start()
    with Session(engine) as first:
        first.execute(text("SELECT 1"))  # a read first, as create_job does: still outside any transaction
        hold_project_lock(first, "job-quota", DEFAULT_PROJECT)
        locked.set()
        time.sleep(0.3)
        order.append("first commits")
        first.commit()
    thread.join(10)
    engine.dispose()
    assert order == ["first commits", "second locked"]
