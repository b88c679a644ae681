"""The poll fast paths (api.jobs.polls on api.db.raw) against the ORM reads they stand in for: the same job
row, the same readiness report, and event pages byte for byte what FastAPI encoded from the ORM's rows, on every
page of a job with messages and metrics (rollouts included), from a cold cache and a warm one. The same checks
run on PostgreSQL in tests/integration/test_db_sessions.py (``assert_polls_match_the_orm``)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter
from sqlalchemy.orm import Session

from api.core.pagination import ListResponse
from api.core.settings import ApiSettings
from api.db.models import DEFAULT_PROJECT
from api.db.session import make_engine
from api.jobs import access, events
from api.jobs.polls import EventCache, Polls, render_event
from api.jobs.schemas import Job, JobEvent, JobReadiness
from tests.helpers import ARITH_ROWS, job_body, jsonl, metrics_event
from tests.tiny_model import TINY_ID

JOBS = "/v1/fine_tuning/jobs"
WORKER = {"Authorization": "Bearer t0k"}
PAGE = TypeAdapter(ListResponse[JobEvent])
SAMPLE = {"prompt": "1+1=", "completion": '2 \u00e9\u4e2d"\\\n', "reward": 1.0, "advantage": 0.5}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False}


def seed_job(client: TestClient, steps: int = 7) -> str:
    """A job mid-run through the public and internal APIs: messages, then ``steps`` metrics events (rollouts with
    non-ASCII, quotes and newlines, a null KL on one step), then a warning."""
    f = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    job = client.post(JOBS, json=job_body(TINY_ID, f.json()["id"], max_steps=steps)).json()["id"]
    url = f"/internal/jobs/{job}"
    epoch = client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=WORKER).json()
    posted = [
        metrics_event(s, steps, samples=[SAMPLE] * (s % 3), **({"kl": None} if s == 2 else {}))
        for s in range(1, steps + 1)
    ]
    posted.append({"type": "message", "level": "warn", "message": 'a warning, with "quotes" and \u00fcml\u00e4uts'})
    r = client.post(f"{url}/events", json={"epoch": epoch["epoch"], "events": posted}, headers=WORKER)
    assert r.status_code == 200, r.text
    return job


def assert_polls_match_the_orm(client: TestClient, settings: ApiSettings) -> None:
    job_id = seed_job(client)
    engine = make_engine(settings.db_url)
    try:
        for polls in (Polls(engine), Polls(engine, EventCache(max_bytes=4000))):  # a cache that keeps ~2 events
            with Session(engine) as s:
                row = access.get_job(s, DEFAULT_PROJECT, job_id)
                view = polls.job(DEFAULT_PROJECT, job_id)
                assert view is not None and view.columns() == row.columns()
                assert Job.from_row(view) == Job.from_row(row)
                assert JobReadiness.from_row(view) == JobReadiness.from_row(row)
                assert polls.job("proj-other", job_id) is None and polls.job(DEFAULT_PROJECT, "ftjob-nope") is None

                ids = [e.id for e in events.list_events(s, DEFAULT_PROJECT, job_id, limit=100, after=None).items]
                assert len(ids) > 10
                for limit in (1, 3, 20, 100):
                    for after in [None, *ids]:
                        page = events.list_events(s, DEFAULT_PROJECT, job_id, limit=limit, after=after)
                        want = PAGE.dump_json(
                            ListResponse[JobEvent].page([JobEvent.from_row(r) for r in page.items], page.has_more),
                            by_alias=True,
                        )
                        for _ in range(2):  # rendered, then from the cache
                            got = polls.event_page(DEFAULT_PROJECT, job_id, limit=limit, after=after)
                            assert got == (want if page.items else None), (limit, after)
                            assert polls.render(page.items, page.has_more) == want
                assert polls.event_page("proj-other", job_id, limit=20, after=None) is None
                assert polls.event_page(DEFAULT_PROJECT, job_id, limit=20, after="ftevent-nope") is None
        # what the route answers is that encoding too, and what FastAPI made of the ORM's rows before
        r = client.get(f"{JOBS}/{job_id}/events", params={"limit": 5, "after": ids[2]})
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        with Session(engine) as s:
            page = events.list_events(s, DEFAULT_PROJECT, job_id, limit=5, after=ids[2])
        assert r.content == PAGE.dump_json(
            ListResponse[JobEvent].page([JobEvent.from_row(x) for x in page.items], page.has_more), by_alias=True
        )
    finally:
        engine.dispose()


def test_the_fast_reads_match_the_orm_reads_on_sqlite(client: TestClient, settings: ApiSettings) -> None:
    assert_polls_match_the_orm(client, settings)


def test_the_event_cache_holds_at_most_its_bytes_and_drops_the_least_recently_used() -> None:
    cache = EventCache(max_bytes=10)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    assert cache.get("a") == b"1234"  # a is now the most recent
    cache.put("c", b"1234")  # 12 bytes: b goes
    assert (cache.get("b"), cache.get("a"), cache.get("c"), cache.size) == (None, b"1234", b"1234", 8)
    cache.put("a", b"12345678")  # replaced, 12 bytes: c goes
    assert (cache.get("c"), cache.get("a"), cache.size) == (None, b"12345678", 8)


def test_an_event_renders_as_fastapi_encodes_it(client: TestClient) -> None:
    job_id = seed_job(client, steps=2)
    data = client.get(f"{JOBS}/{job_id}/events", params={"limit": 1}).json()["data"]
    event = JobEvent.model_validate(data[0])
    assert render_event(event) == event.model_dump_json(by_alias=True).encode()  # UTF-8, compact, in field order
