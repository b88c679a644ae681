"""Limits that hold across replicas: the per-key rate limit in Redis (api.core.ratelimit) and the per-project job quota
under a PostgreSQL advisory lock (api.db.locks), checked with two uvicorn API processes sharing one Redis and one
Postgres, behind one key.

The limiter's own semantics (burst, refill, Retry-After, separate keys, expiry) run against the real Redis too:
the Lua script is the thing under test, and it only runs there.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import redis
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from api.core.ratelimit import KEY_PREFIX, RedisRateLimiter
from api.db.locks import hold_project_lock
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.stack import Stack, production_env
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = pytest.mark.integration

PER_MINUTE = 30
QUOTA = 2
GRADER = {
    "type": "string_check",
    "name": "exact",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "eq",
}


def takes(url: str, per_minute: int, keys: list[str], *, replicas: int = 1) -> list[float]:
    """``acquire`` for each key in turn, round-robin over ``replicas`` limiters (as API processes would be)."""

    async def run() -> list[float]:
        limiters = [RedisRateLimiter(url, per_minute) for _ in range(replicas)]
        try:
            return [await limiters[i % replicas].acquire(key) for i, key in enumerate(keys)]
        finally:
            for limiter in limiters:
                await limiter.aclose()

    return asyncio.run(run())


def test_the_burst_is_per_minute_then_retry_after_is_the_time_to_the_next_token(redis_url: str) -> None:
    key = secrets.token_hex(8)
    waits = takes(redis_url, 120, [key] * 121)  # 2 tokens a second: the next one 0.5 s after the burst
    assert waits[:120] == [0.0] * 120
    assert 0.3 < waits[120] <= 0.5, waits[120]
    ttl = redis.Redis.from_url(redis_url).pttl(KEY_PREFIX + key)
    assert 0 < ttl <= 60_000  # gone once idle long enough to be full again


def test_the_bucket_refills_at_per_minute_over_60(redis_url: str) -> None:
    key = secrets.token_hex(8)
    assert takes(redis_url, 120, [key] * 121)[-1] > 0
    time.sleep(0.55)  # one token back, not two
    first, second = takes(redis_url, 120, [key, key])
    assert first == 0.0 and 0.3 < second <= 0.5


def test_keys_have_separate_buckets(redis_url: str) -> None:
    a, b = secrets.token_hex(8), secrets.token_hex(8)
    waits = takes(redis_url, 3, [a, a, a, a, b, b])
    assert waits[:3] == [0.0] * 3 and waits[3] > 0 and waits[4:] == [0.0, 0.0]


def test_replicas_draw_on_one_budget(redis_url: str) -> None:
    key = secrets.token_hex(8)
    waits = takes(redis_url, 10, [key] * 14, replicas=2)
    assert waits[:10] == [0.0] * 10 and all(w > 0 for w in waits[10:])


def test_a_burst_of_concurrent_takes_hands_out_each_token_once(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """300 requests in flight at once, more than the pool's connections: they queue for one (no fail-open), and
    the script's atomicity leaves exactly the burst allowed."""
    key = secrets.token_hex(8)

    async def run() -> list[float]:
        limiter = RedisRateLimiter(redis_url, 100)
        try:
            return list(await asyncio.gather(*(limiter.acquire(key) for _ in range(300))))
        finally:
            await limiter.aclose()

    with caplog.at_level(logging.WARNING, logger="api.core.ratelimit"):
        waits = asyncio.run(run())
    assert waits.count(0.0) == 100
    assert not caplog.records, [r.getMessage() for r in caplog.records]


@pytest.fixture(scope="module")
def two_apis(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[httpx.Client, httpx.Client, str]]:
    """Two API processes on one Postgres and one Redis (as two replicas behind a load balancer), no worker."""
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, tmp_path_factory.mktemp("replicas"))
        env |= {"RATE_LIMIT_PER_MINUTE": str(PER_MINUTE), "MAX_ACTIVE_JOBS_PER_PROJECT": str(QUOTA)}
        stacks = [Stack(env, logs_dir), Stack(env, logs_dir)]
        try:
            for stack in stacks:
                stack.start_api()
            with (
                httpx.Client(base_url=stacks[0].url, timeout=60) as a,
                httpx.Client(base_url=stacks[1].url, timeout=60) as b,
            ):
                yield a, b, pg_url
        finally:
            for stack in stacks:
                stack.stop()


def test_two_api_processes_share_one_rate_limit_per_key(two_apis: tuple[httpx.Client, httpx.Client, str]) -> None:
    a, b, _ = two_apis
    key = {"Authorization": f"Bearer rate-{secrets.token_hex(4)}"}  # the service is open: any key is its own bucket
    start = time.monotonic()
    answers = [((a, b)[i % 2], (a, b)[i % 2].get("/v1/models", headers=key)) for i in range(2 * PER_MINUTE)]
    elapsed = time.monotonic() - start
    codes = [r.status_code for _, r in answers]
    assert codes[:PER_MINUTE] == [200] * PER_MINUTE  # the burst, alternating between the processes
    # Per process, each would have let all 60 through (30 each); shared, the rest is what refilled meanwhile.
    assert codes.count(200) <= PER_MINUTE + elapsed * PER_MINUTE / 60 + 1, (codes, elapsed)
    refused = [(client, r) for client, r in answers if r.status_code == 429]
    assert {client.base_url for client, _ in refused} == {a.base_url, b.base_url}
    for _, r in refused:
        assert r.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(r.headers["Retry-After"]) <= 60 // PER_MINUTE  # one token every 2 s
    other = {"Authorization": f"Bearer rate-{secrets.token_hex(4)}"}
    assert b.get("/v1/models", headers=other).status_code == 200  # another key, another budget


def test_concurrent_creations_in_two_processes_stop_at_the_quota(
    two_apis: tuple[httpx.Client, httpx.Client, str],
) -> None:
    a, b, _ = two_apis
    key = {"Authorization": f"Bearer quota-{secrets.token_hex(4)}"}
    f = a.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=key)
    assert f.status_code == 201, f.text
    body = job_body(TINY_ID, f.json()["id"])
    body["method"]["reinforcement"]["grader"] = GRADER
    start = threading.Barrier(2 * QUOTA)

    def create(client: httpx.Client) -> httpx.Response:
        start.wait()
        return client.post("/v1/fine_tuning/jobs", json=body, headers=key)

    with ThreadPoolExecutor(2 * QUOTA) as pool:
        answers = list(pool.map(create, [a, b] * QUOTA))
    codes = sorted(r.status_code for r in answers)
    assert codes == [201] * QUOTA + [429] * QUOTA, [r.text for r in answers]
    assert all(r.json()["error"]["code"] == "quota_exceeded" for r in answers if r.status_code == 429)
    jobs = b.get("/v1/fine_tuning/jobs", headers=key).json()["data"]
    assert len(jobs) == QUOTA


def test_the_project_lock_makes_a_second_postgres_transaction_wait(
    two_apis: tuple[httpx.Client, httpx.Client, str],
) -> None:
    engine = create_engine(two_apis[2])
    order: list[str] = []
    locked = threading.Event()

    def second() -> None:
        with Session(engine) as s:
            locked.wait()
            hold_project_lock(s, "job-quota", "proj-x")
            order.append("second locked")
            s.commit()

    thread = threading.Thread(target=second)
    thread.start()
    with Session(engine) as first:
        hold_project_lock(first, "job-quota", "proj-x")
        hold_project_lock(first, "job-quota", "proj-y")  # another project's lock is another lock
        locked.set()
        time.sleep(0.3)
        order.append("first commits")
        first.commit()
    thread.join(10)
    engine.dispose()
    assert order == ["first commits", "second locked"]
