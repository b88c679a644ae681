"""A remembered key answers a poll in one query, and is never trusted past a revocation or the end of open mode
(api.core.callers). The revocations and key creations here go straight to the database, as another API process or the
admin CLI would make them: this process's cache never hears of them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, event, update
from sqlalchemy.orm import Session

from api.core import callers
from api.core.settings import ApiSettings
from api.db import raw
from api.db.models import DEFAULT_PROJECT, ApiKey, now
from api.jobs import polls, scheduling
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID
from tests.unit.test_tenants import assert_401, bearer, new_key

JOBS = "/v1/fine_tuning/jobs"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False}


def make_job(client: TestClient, headers: dict[str, str] | None = None) -> str:
    f = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
    )
    assert f.status_code == 201, f.text
    r = client.post(JOBS, json=job_body(TINY_ID, f.json()["id"]), headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["id"]


@contextmanager
def statements(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The SQL statements the API runs inside the block: through SQLAlchemy, and on a driver connection of the
    pool (api.db.raw.fetch, which SQLAlchemy's events do not see)."""
    seen: list[str] = []
    engine = client.app.state.polls.engine  # type: ignore[attr-defined]

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    def fetch(engine: Any, sql: str, params: Any) -> Any:
        seen.append(sql)
        return raw.fetch(engine, sql, params)

    event.listen(engine, "before_cursor_execute", record)
    with monkeypatch.context() as m:
        m.setattr(polls, "fetch", fetch)
        try:
            yield seen
        finally:
            event.remove(engine, "before_cursor_execute", record)


def revoke(settings: ApiSettings, key_id: str) -> None:
    with Session(create_engine(settings.db_url)) as s:
        s.execute(update(ApiKey).where(ApiKey.id == key_id).values(revoked_at=now()))
        s.commit()


def test_a_remembered_key_polls_in_one_query_and_a_revocation_elsewhere_is_a_401_at_once(
    client: TestClient, settings: ApiSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a queued job's place in line is read from the scheduler's snapshot, shared by this process's polls for
    # SNAPSHOT_MAX_AGE: held long enough here that a slow machine does not read it again mid-test
    monkeypatch.setattr(scheduling, "SNAPSHOT_MAX_AGE", 600.0)
    _, key_id, key = new_key(settings)
    job = make_job(client, bearer(key))
    assert client.get(f"{JOBS}/{job}", headers=bearer(key)).status_code == 200  # resolved the slow way, remembered
    for path in (f"{JOBS}/{job}", f"{JOBS}/{job}/events", f"{JOBS}/{job}/readiness"):
        with statements(client, monkeypatch) as seen:
            r = client.get(path, headers=bearer(key))
        assert r.status_code == 200, r.text
        assert "api_keys" in seen[0], seen  # the key's check rides in the read's own query
        assert len(seen) == 1, seen  # the queued job's waiting reason came from the snapshot the first poll read
    assert client.get(f"{JOBS}/{job}/events", headers=bearer(key)).json()["data"]

    revoke(settings, key_id)  # by another process: this one's cache still holds the key
    for path in (f"{JOBS}/{job}", f"{JOBS}/{job}/events", f"{JOBS}/{job}/readiness"):
        assert_401(client.get(path, headers=bearer(key)), "invalid_api_key")


def test_a_remembered_key_still_gets_404_for_another_projects_job_and_for_an_unknown_one(
    client: TestClient, settings: ApiSettings
) -> None:
    _, _, key_a = new_key(settings, name="a")
    _, _, key_b = new_key(settings, name="b")
    job_a = make_job(client, bearer(key_a))
    assert client.get(f"{JOBS}/{job_a}", headers=bearer(key_b)).status_code == 404  # b is remembered from here
    for path in (f"{JOBS}/{job_a}", f"{JOBS}/{job_a}/events", f"{JOBS}/ftjob-nope/events", f"{JOBS}/ftjob-nope"):
        r = client.get(path, headers=bearer(key_b))
        assert r.status_code == 404 and r.json()["error"]["param"] == "fine_tuning_job_id", r.text
    # an event page past the last event is empty, not a 404, for the owner (after the slow check)
    events = client.get(f"{JOBS}/{job_a}/events", headers=bearer(key_a)).json()["data"]
    r = client.get(f"{JOBS}/{job_a}/events", params={"after": events[-1]["id"]}, headers=bearer(key_a))
    assert r.status_code == 200 and r.json()["data"] == []


def test_open_mode_remembered_ends_with_the_first_key_created_elsewhere(
    client: TestClient, settings: ApiSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = make_job(client)
    sdk = bearer("sk-whatever-the-sdk-sends")
    for headers in (None, sdk):  # open mode, remembered for a request with no key and one with any key
        assert client.get(f"{JOBS}/{job}", headers=headers).status_code == 200
        with statements(client, monkeypatch) as seen:
            assert client.get(f"{JOBS}/{job}/events", headers=headers).status_code == 200
        assert len(seen) == 1, seen

    _, _, key = new_key(settings, DEFAULT_PROJECT)  # the service leaves open mode, in another process
    assert_401(client.get(f"{JOBS}/{job}"), "missing_api_key")
    assert_401(client.get(f"{JOBS}/{job}/events", headers=sdk), "invalid_api_key")
    # the new key, sent while this process still remembered open mode for unknown tokens, opens its project's job
    r = client.get(f"{JOBS}/{job}", headers=bearer(key))
    assert r.status_code == 200 and r.json()["id"] == job


def test_the_key_cache_forgets_past_its_age_and_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(callers.time, "monotonic", lambda: clock[0])
    cache = callers.KeyCache(size=2, max_age=60)
    cache.put("a", "p1")
    cache.put("b", "p2")
    clock[0] += 60
    assert (cache.get("a"), cache.get("b")) == ("p1", "p2")  # 60 s old: still trusted (under its guard)
    clock[0] += 1
    assert cache.get("a") is None  # past the minute: resolved again, which also refreshes last_used_at
    cache.put("c", "p3")
    cache.put("d", "p4")  # size 2: the oldest go
    assert (cache.get("b"), cache.get("c"), cache.get("d")) == (None, "p3", "p4")
