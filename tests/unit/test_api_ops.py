"""Reading a job (metric series, samples, the SSE stream), operations (readiness, Prometheus, request ids, JSON
logs) and limits (per-key rate limit, per-project job quota), on the SQLite schema built by Alembic."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi.testclient import TestClient

from api.core.ops import JsonFormatter, request_id
from tests.helpers import ARITH_ROWS, job_body, jsonl, metrics_event
from tests.tiny_model import TINY_ID

AUTH = {"Authorization": "Bearer t0k"}


def make_job(client: TestClient, steps: int = 3, finish: bool = True) -> str:
    """A job whose worker (through the internal API) recorded ``steps`` metrics events with rollouts."""
    fid = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    job_id = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid.json()["id"])).json()["id"]
    url = f"/internal/jobs/{job_id}"
    client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=AUTH)
    for step in range(1, steps + 1):
        sample = {"prompt": "1+1=", "completion": str(step), "reward": 0.5, "rewards": {"g": 0.5}, "advantage": 0.1}
        ev = metrics_event(step, steps, reward=step / 10, samples=[sample])
        client.post(f"{url}/events", json={"epoch": 1, "events": [ev]}, headers=AUTH)
    if finish:
        client.post(f"{url}/checkpoints", json={"epoch": 1, "step_number": steps, "object_key": "k"}, headers=AUTH)
        client.post(f"{url}/finish", json={"epoch": 1, "status": "succeeded"}, headers=AUTH)
    return job_id


def test_metric_series_is_paginated_by_step_and_leaves_rollouts_out(client: TestClient) -> None:
    job = make_job(client, steps=5)
    page = client.get(f"/v1/fine_tuning/jobs/{job}/metrics", params={"limit": 2}).json()
    assert [m["step"] for m in page["data"]] == [1, 2] and page["has_more"]
    rest = client.get(f"/v1/fine_tuning/jobs/{job}/metrics", params={"after": 2}).json()
    assert [m["step"] for m in rest["data"]] == [3, 4, 5] and not rest["has_more"]
    assert rest["data"][0]["metrics"]["scores"]["train_reward_mean"] == 0.3
    assert rest["data"][0]["metrics"]["samples"] == []


def test_event_pages_walk_every_event_once_and_a_404_names_what_is_missing(client: TestClient) -> None:
    """An event page is one query (the anchor and the job are subqueries of it); only an empty page looks for
    which of the two is missing, the job first, as when each was read before the page."""
    job = make_job(client, steps=3)
    url = f"/v1/fine_tuning/jobs/{job}/events"
    every = [e["id"] for e in client.get(url, params={"limit": 100}).json()["data"]]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = client.get(url, params=params).json()
        seen += [e["id"] for e in page["data"]]
        if not page["has_more"]:
            break
        params["after"] = page["last_id"]
    assert seen == every and len(every) > 4
    last = client.get(url, params={"after": every[-1]}).json()
    assert last["data"] == [] and not last["has_more"]
    for path, after, param in (
        (url, "ftevent-nope", "after"),
        ("/v1/fine_tuning/jobs/ftjob-nope/events", "ftevent-nope", "fine_tuning_job_id"),
        ("/v1/fine_tuning/jobs/ftjob-nope/events", every[0], "fine_tuning_job_id"),
    ):
        r = client.get(path, params={"after": after})
        assert r.status_code == 404 and r.json()["error"]["param"] == param, r.text
    r = client.get("/v1/fine_tuning/jobs/ftjob-nope/metrics")
    assert r.status_code == 404 and r.json()["error"]["param"] == "fine_tuning_job_id"


def test_samples_of_a_step(client: TestClient) -> None:
    job = make_job(client, steps=3)
    latest = client.get(f"/v1/fine_tuning/jobs/{job}/samples").json()
    assert latest["step"] == 3 and latest["data"][0]["completion"] == "3" and latest["data"][0]["rewards"] == {"g": 0.5}
    assert client.get(f"/v1/fine_tuning/jobs/{job}/samples", params={"step": 2}).json()["data"][0]["completion"] == "2"
    missing = client.get(f"/v1/fine_tuning/jobs/{job}/samples", params={"step": 9})
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "step"


def _parse_sse(body: str) -> list[dict[str, Any]]:
    out = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        out.append({"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])})
    return out


def test_event_stream_ends_with_the_job_and_resumes_from_last_event_id(client: TestClient) -> None:
    job = make_job(client, steps=3)
    with client.stream("GET", f"/v1/fine_tuning/jobs/{job}/events/stream") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = _parse_sse(r.read().decode())
    listed = client.get(f"/v1/fine_tuning/jobs/{job}/events", params={"limit": 100}).json()["data"][::-1]
    assert [e["data"]["id"] for e in events] == [e["id"] for e in listed]  # every event, oldest first
    assert [e["event"] for e in events].count("metrics") == 3 and events[-1]["data"]["message"].startswith("The job")
    cut = events[3]["id"]
    with client.stream("GET", f"/v1/fine_tuning/jobs/{job}/events/stream", headers={"Last-Event-ID": str(cut)}) as r:
        resumed = _parse_sse(r.read().decode())
    assert [e["id"] for e in resumed] == [e["id"] for e in events[4:]]
    assert all(e["data"]["data"]["samples"] for e in events if e["event"] == "metrics")
    with client.stream("GET", f"/v1/fine_tuning/jobs/{job}/events/stream", params={"samples": "false"}) as r:
        light = _parse_sse(r.read().decode())
    assert [e["id"] for e in light] == [e["id"] for e in events]  # the same events, the rollouts left out
    metrics = [e["data"]["data"] for e in light if e["event"] == "metrics"]
    assert [m["step"] for m in metrics] == [1, 2, 3] and all(m["samples"] == [] for m in metrics)


def test_readiness_prometheus_and_request_ids(client: TestClient) -> None:
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {
        "database": "ok",
        "broker": "ok",
        "object_store": "ok",
        "inference": "ok",  # the embedded defaults start a model's replica on first use (INFERENCE_ON_DEMAND)
    }
    make_job(client, steps=2)
    r = client.get("/v1/models", headers={"X-Request-ID": "req-123"})
    assert r.headers["X-Request-ID"] == "req-123" and len(client.get("/v1/models").headers["X-Request-ID"]) == 32
    text = client.get("/metrics").text
    assert 'rft_jobs{state="succeeded"} 1.0' in text
    assert "rft_grpo_steps_total 2.0" in text
    assert 'rft_http_request_seconds_count{method="GET",route="/v1/models",status="200"}' in text
    assert "rft_queue_depth" in text


def test_log_lines_are_json_with_the_request_id() -> None:
    token = request_id.set("req-9")
    try:
        line = JsonFormatter().format(logging.LogRecord("api", logging.WARNING, "f", 1, "hello %s", ("x",), None))
    finally:
        request_id.reset(token)
    assert json.loads(line) | {"ts": 0} == {
        "ts": 0,
        "level": "warning",
        "logger": "api",
        "message": "hello x",
        "request_id": "req-9",
    }
