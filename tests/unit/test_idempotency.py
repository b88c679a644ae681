"""Idempotency-Key on POST /v1/files and POST /v1/fine_tuning/jobs (Stripe's rules), on the Alembic-built schema."""

from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from api.core import idempotency_store as idem
from api.core.errors import Conflict
from api.core.settings import ApiSettings
from api.db.models import now
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

JOBS = "/v1/fine_tuning/jobs"


def sql(settings: ApiSettings, query: str, **params: object) -> object:
    with create_engine(settings.db_url).begin() as conn:
        res = conn.execute(text(query), params)
        return res.scalar() if res.returns_rows else None


def upload(client: TestClient, body: bytes, key: str | None = None, name: str = "d.jsonl"):  # type: ignore[no-untyped-def]
    headers = {"Idempotency-Key": key} if key else {}
    return client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": (name, body)}, headers=headers)


def post_job(client: TestClient, body: dict, key: str | None = None, *, indent: int | None = None):  # type: ignore[no-untyped-def]
    headers = {"content-type": "application/json"} | ({"Idempotency-Key": key} if key else {})
    return client.post(JOBS, content=json.dumps(body, indent=indent).encode(), headers=headers)


def broker_messages(settings: ApiSettings) -> int:
    return sum(p.is_file() for p in (settings.state_dir / "broker").iterdir())


def test_job_retry_replays_the_first_response_and_does_no_work(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS)).json()["id"]
    body = job_body(TINY_ID, fid)
    first = post_job(client, body, "job-key-1")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    sent = broker_messages(settings)
    # the same meaning with other key order and whitespace: canonical JSON makes it the same request
    reordered = dict(reversed(list(body.items())))
    again = post_job(client, reordered, "job-key-1", indent=2)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content and again.json()["id"] == first.json()["id"]
    assert sql(settings, "select count(*) from jobs") == 1
    assert broker_messages(settings) == sent  # no second enqueue
    events = client.get(f"{JOBS}/{first.json()['id']}/events").json()["data"]
    assert [e["message"] for e in events].count("Job queued") == 1
    # without a key every POST is a new job, as before
    assert post_job(client, body).json()["id"] != first.json()["id"]


def test_upload_retry_with_a_new_multipart_boundary_is_replayed(client: TestClient, settings: ApiSettings) -> None:
    data = jsonl(ARITH_ROWS)
    first, again = upload(client, data, "file-key"), upload(client, data, "file-key")
    # httpx draws a fresh boundary per request: the raw bodies differ, the request's meaning does not
    assert first.request.headers["content-type"] != again.request.headers["content-type"]
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content
    assert sql(settings, "select count(*) from files") == 1
    assert sum(p.is_file() for p in settings.objects_dir.rglob("*")) == 1
    # other bytes, or another filename, under the same key: a different request
    other = upload(client, jsonl(ARITH_ROWS[:3]), "file-key")
    renamed = upload(client, data, "file-key", name="other.jsonl")
    for r in (other, renamed):
        assert r.status_code == 422 and r.json()["error"]["code"] == "idempotency_key_reused"


def test_same_key_different_request_is_422(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS)).json()["id"]
    assert post_job(client, job_body(TINY_ID, fid), "k").status_code == 201
    r = post_job(client, job_body(TINY_ID, fid) | {"seed": 8}, "k")
    err = r.json()["error"]
    assert r.status_code == 422 and err["code"] == "idempotency_key_reused" and err["param"] == "Idempotency-Key"
    # the key is scoped to the project, not to the route: the method and path are part of the fingerprint
    assert upload(client, jsonl(ARITH_ROWS), "k").status_code == 422
    assert sql(settings, "select count(*) from jobs") == 1


def test_in_flight_key_is_409_with_retry_after(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS)).json()["id"]
    sql(
        settings,
        "insert into idempotency_keys (project_id, key, method_path, request_hash, created_at) "
        "values ('proj-default', 'busy', 'POST /v1/fine_tuning/jobs', 'x', :t)",
        t=now(),
    )
    r = post_job(client, job_body(TINY_ID, fid), "busy")
    assert r.status_code == 409 and r.headers["Retry-After"] == "1"
    assert r.json()["error"]["code"] == "idempotency_key_in_use"
    assert sql(settings, "select count(*) from jobs") == 0


def test_a_refused_request_saves_nothing_and_the_key_is_reusable(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS)).json()["id"]
    assert post_job(client, job_body("no-such-model", fid), "fix-me").status_code == 400  # refused by the service
    assert post_job(client, job_body(TINY_ID, fid, group_size=1), "fix-me").status_code == 422  # by the schema
    assert sql(settings, "select count(*) from idempotency_keys") == 0
    ok = post_job(client, job_body(TINY_ID, fid), "fix-me")
    assert ok.status_code == 201 and "Idempotent-Replayed" not in ok.headers
    # uploads too: a bad line is a 400, then the corrected file goes through under the same key
    assert upload(client, b'{"prompt": "a"}\n{"prompt": \n', "up").status_code == 400
    assert upload(client, jsonl(ARITH_ROWS), "up").status_code == 201


def test_a_server_error_is_saved_and_replayed(
    client: TestClient, settings: ApiSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = client.app.state.store  # type: ignore[attr-defined]

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("object store down")

    monkeypatch.setattr(store, "put_file", broken)
    first = upload(client, jsonl(ARITH_ROWS), "k500")
    assert first.status_code == 500 and first.json()["error"]["code"] == "internal_error"
    monkeypatch.undo()  # the store is back, but the outcome under this key is fixed (Stripe)
    again = upload(client, jsonl(ARITH_ROWS), "k500")
    assert again.status_code == 500 and again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content and sql(settings, "select count(*) from files") == 0


def test_keys_expire_after_24_hours(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS)).json()["id"]
    old = post_job(client, job_body(TINY_ID, fid), "day").json()["id"]
    sql(settings, "update idempotency_keys set created_at = created_at - 86401")
    # an expired key is absent: even a different request under it is new work, and the old row is pruned
    new = post_job(client, job_body(TINY_ID, fid) | {"seed": 9}, "day")
    assert new.status_code == 201 and new.json()["id"] != old and "Idempotent-Replayed" not in new.headers
    assert sql(settings, "select count(*) from idempotency_keys") == 1
    assert sql(settings, "select min(created_at) from idempotency_keys") >= now() - 60  # type: ignore[operator]


@pytest.mark.parametrize("key", ["", "k" * 256])
def test_key_length_is_checked(client: TestClient, settings: ApiSettings, key: str) -> None:
    r = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))},
                    headers={"Idempotency-Key": key})  # fmt: skip
    assert r.status_code == 400 and r.json()["error"]["param"] == "Idempotency-Key"
    assert sql(settings, "select count(*) from files") == 0


def test_concurrent_first_uses_one_winner_per_project(settings: ApiSettings) -> None:
    """Eight threads take the same key at once: the primary key lets exactly one through."""
    engine = create_engine(settings.db_url, connect_args={"timeout": 30})
    barrier, outcomes = threading.Barrier(8), []
    lock = threading.Lock()

    def take(project: str) -> None:
        with Session(engine) as session:
            barrier.wait()
            try:
                got = idem.begin(
                    session, project_id=project, key="race", method_path="POST /x", request_hash="h", ttl_seconds=60
                )
                outcome = "won" if got is None else "replayed"
            except Conflict as exc:
                outcome = exc.code or "conflict"
        with lock:
            outcomes.append((project, outcome))

    threads = [threading.Thread(target=take, args=("proj-a" if i < 6 else "proj-b",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o for p, o in outcomes if p == "proj-a") == ["idempotency_key_in_use"] * 5 + ["won"]
    assert sorted(o for p, o in outcomes if p == "proj-b") == ["idempotency_key_in_use", "won"]
