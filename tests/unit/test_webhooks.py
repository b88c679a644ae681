"""Webhooks on terminal job states: endpoints API, outbox rows, and real signed deliveries to a local receiver."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from api.core.settings import ApiSettings
from api.db.models import Job, now
from api.webhooks import dispatch as webhook_dispatch
from api.webhooks import service as webhooks
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

AUTH = {"Authorization": "Bearer t0k"}
ALL = [
    "fine_tuning.job.succeeded",
    "fine_tuning.job.failed",
    "fine_tuning.job.cancelled",
    "fine_tuning.job.budget_warning",
    "fine_tuning.job.budget_reached",
]


class Receiver:
    """An HTTP server of ours on 127.0.0.1 that answers a scripted list of status codes (then the last one)."""

    def __init__(self, codes: list[int]) -> None:
        self.codes, self.requests = list(codes), []  # type: ignore[var-annotated]
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                outer.requests.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                code = outer.codes.pop(0) if len(outer.codes) > 1 else outer.codes[0]
                self.send_response(code)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"webhook_poll_seconds": 0.05, "webhook_timeout_seconds": 2, "webhook_retry_schedule": [1, 1]}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver([500, 500, 200])
    yield r
    r.close()


def queued_job(client: TestClient) -> str:
    fid = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    return client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid.json()["id"])).json()["id"]


def wait_for(client: TestClient, endpoint_id: str, done: set[str], timeout: float = 20) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = client.get(f"/v1/webhook_endpoints/{endpoint_id}/deliveries").json()["data"]
        if data and all(d["status"] in done for d in data):
            return data
        time.sleep(0.1)
    raise AssertionError(f"deliveries not {done} after {timeout}s: {data}")


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The receiver's side of Standard Webhooks, written from the spec (not with the service's code)."""
    key = base64.b64decode(secret.split("_", 1)[1])
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{body.decode()}".encode()
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        sig.startswith("v1,") and hmac.compare_digest(sig[3:], expected) for sig in headers["webhook-signature"].split()
    )


def test_failed_job_is_delivered_signed_after_two_retries(client: TestClient, receiver: Receiver) -> None:
    ep = client.post("/v1/webhook_endpoints", json={"url": receiver.url})
    assert ep.status_code == 201
    endpoint = ep.json()
    assert endpoint["event_types"] == ALL and endpoint["secret"].startswith("whsec_")
    assert len(base64.b64decode(endpoint["secret"][6:])) >= 24
    job_id = queued_job(client)
    url = f"/internal/jobs/{job_id}"
    claim = {"worker_id": "w", "claim_id": "claim-one"}
    assert client.post(f"{url}/claim", json=claim, headers=AUTH).status_code == 200
    finish = {"epoch": 1, "status": "failed", "error_message": "boom"}
    assert client.post(f"{url}/finish", json=finish, headers=AUTH).status_code == 200

    [delivery] = wait_for(client, endpoint["id"], {"delivered", "failed"})
    assert delivery["status"] == "delivered" and delivery["attempts"] == 3 and delivery["last_status_code"] == 200
    assert [h["status_code"] for h in delivery["history"]] == [500, 500, 200]
    assert delivery["history"][0]["error"].startswith("HTTP 500") and delivery["history"][2]["error"] is None
    at = [h["at"] for h in delivery["history"]]
    assert at[1] - at[0] >= 1 and at[2] - at[1] >= 1  # each retry waited for the (short, 1 s) schedule
    assert len(receiver.requests) == 3
    for req in receiver.requests:  # every attempt is signed, same webhook-id (the receiver's dedupe key)
        assert req["headers"]["content-type"] == "application/json"
        assert req["headers"]["webhook-id"] == delivery["id"]
        assert abs(int(req["headers"]["webhook-timestamp"]) - time.time()) < 60
        assert verify(endpoint["secret"], req["headers"], req["body"])
    assert not verify("whsec_" + base64.b64encode(b"x" * 32).decode(), receiver.requests[0]["headers"], b"{}")
    event = json.loads(receiver.requests[-1]["body"])
    assert event == {
        "id": event["id"],
        "object": "event",
        "type": "fine_tuning.job.failed",
        "created_at": event["created_at"],
        "data": {"id": job_id},
    }
    # a second terminal transition cannot happen, so there is no second event
    again = client.post(f"{url}/finish", json=finish | {"status": "succeeded"}, headers=AUTH)
    assert again.status_code == 409
    assert client.post(f"/v1/fine_tuning/jobs/{job_id}/cancel").status_code == 409
    time.sleep(0.3)
    assert len(client.get(f"/v1/webhook_endpoints/{endpoint['id']}/deliveries").json()["data"]) == 1
    assert len(receiver.requests) == 3


def test_cancel_paths_and_subscriptions(client: TestClient, settings: ApiSettings, receiver: Receiver) -> None:
    receiver.codes = [204]
    only_cancel = client.post(
        "/v1/webhook_endpoints", json={"url": receiver.url, "event_types": ["fine_tuning.job.cancelled"]}
    ).json()
    only_success = client.post(
        "/v1/webhook_endpoints", json={"url": receiver.url, "event_types": ["fine_tuning.job.succeeded"]}
    ).json()
    queued = queued_job(client)
    assert client.post(f"/v1/fine_tuning/jobs/{queued}/cancel").json()["status"] == "cancelled"
    # a running job whose worker dies after the cancel request: the next claim finishes it as cancelled
    running = queued_job(client)
    url = f"/internal/jobs/{running}"
    client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-one"}, headers=AUTH)
    assert client.post(f"/v1/fine_tuning/jobs/{running}/cancel").json()["status"] == "cancelling"
    with create_engine(settings.db_url).begin() as conn:
        conn.execute(text("update jobs set lease_expires_at = 0 where id = :id"), {"id": running})
    second = client.post(f"{url}/claim", json={"worker_id": "w2", "claim_id": "claim-two"}, headers=AUTH)
    assert second.status_code == 409 and second.json()["error"]["code"] == "not_claimable"

    data = wait_for(client, only_cancel["id"], {"delivered"})
    assert sorted(d["job_id"] for d in data) == sorted([queued, running])
    assert {d["event_type"] for d in data} == {"fine_tuning.job.cancelled"} and data[0]["last_status_code"] == 204
    assert data[0]["created_at"] >= data[1]["created_at"] and data[0]["id"] > data[1]["id"]  # newest first
    assert client.get(f"/v1/webhook_endpoints/{only_success['id']}/deliveries").json()["data"] == []


def test_endpoint_api_validation_secrets_and_projects(client: TestClient, settings: ApiSettings) -> None:
    for body, param in (
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "https://example.com", "event_types": ["fine_tuning.job.exploded"]}, "event_types.0"),
        ({"url": "https://example.com", "event_types": []}, "event_types"),
    ):
        r = client.post("/v1/webhook_endpoints", json=body)
        assert r.status_code == 422 and r.json()["error"]["param"] == param, r.json()
    mine = client.post("/v1/webhook_endpoints", json={"url": "https://example.com/h"}).json()
    with Session(create_engine(settings.db_url)) as session:  # another project's endpoint and job
        theirs = webhooks.create_endpoint(session, "proj-other", "http://127.0.0.1:9/other", ALL).id
        other_job = Job(id="ftjob-other", project_id="proj-other")
        assert webhooks.record_job_event(session, other_job, "fine_tuning.job.failed") == 1
        session.commit()
    listed = client.get("/v1/webhook_endpoints").json()["data"]
    assert [e["id"] for e in listed] == [mine["id"]] and "secret" not in listed[0]
    assert client.get(f"/v1/webhook_endpoints/{theirs}/deliveries").status_code == 404
    assert client.delete(f"/v1/webhook_endpoints/{theirs}").status_code == 404
    deleted = client.delete(f"/v1/webhook_endpoints/{mine['id']}").json()
    assert deleted == {"object": "webhook_endpoint.deleted", "id": mine["id"], "deleted": True}
    assert client.get("/v1/webhook_endpoints").json()["data"] == []


def test_gives_up_after_the_schedule_and_claims_are_exclusive(settings: ApiSettings) -> None:
    """Unit level: two dispatchers never claim the same attempt; an endpoint that never answers 2xx is failed."""
    receiver = Receiver([503])
    engine = create_engine(settings.db_url)
    try:
        with Session(engine) as session:
            ep = webhooks.create_endpoint(session, "proj-default", receiver.url, ALL).id
            webhooks.record_job_event(session, Job(id="ftjob-x", project_id="proj-default"), "fine_tuning.job.failed")
            session.commit()
        with Session(engine) as a, Session(engine) as b:
            claimed = webhook_dispatch.claim_next(a, claim_seconds=60)
            assert claimed is not None and webhook_dispatch.claim_next(b, claim_seconds=60) is None
        with create_engine(settings.db_url).begin() as conn:  # release the claim for the dispatcher below
            conn.execute(text("update webhook_deliveries set next_attempt_at = :t"), {"t": now()})
        dispatcher = webhook_dispatch.WebhookDispatcher(
            sessionmaker(engine), poll_seconds=0.05, timeout_seconds=2, schedule=[0]
        )
        try:
            assert dispatcher.run_once() == 2  # attempt 1 fails, the 0 s retry is due at once and fails too
            assert dispatcher.run_once() == 0
        finally:
            dispatcher.stop()
        with Session(engine) as session:
            [row] = webhooks.list_deliveries(session, "proj-default", ep, limit=10, after=None).items
            assert (row.status, row.attempts, row.last_status_code) == ("failed", 2, 503)
            assert [h["status_code"] for h in row.history] == [503, 503]
    finally:
        receiver.close()


def test_dispatcher_survives_a_failing_tick(settings: ApiSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = create_engine(settings.db_url)
    calls = []

    def flaky(*_: Any, **__: Any) -> None:
        calls.append(1)
        raise RuntimeError("database hiccup")

    monkeypatch.setattr(webhook_dispatch, "claim_next", flaky)
    dispatcher = webhook_dispatch.WebhookDispatcher(
        sessionmaker(engine), poll_seconds=0.02, timeout_seconds=1, schedule=[1]
    )
    dispatcher.start()
    time.sleep(0.3)
    alive = dispatcher._thread is not None and dispatcher._thread.is_alive()
    dispatcher.stop()
    assert alive and len(calls) >= 3
