"""The whole flow against real PostgreSQL, Redis, a Celery worker process and an S3 server (moto)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.integration.flow import all_events, check_succeeded_job, submit
from tests.integration.stack import Stack, wait_status

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_job_waits_for_a_real_worker_then_trains_and_serves_the_adapter(
    services_stack: Stack, api: httpx.Client, pg_url: str, s3: dict[str, str], tiny_model_dir: Path, tmp_path: Path
) -> None:
    services_stack.stop_worker()
    job = submit(api)
    time.sleep(4)
    # Nothing runs in-process: with no worker the job stays in the queue.
    assert api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["status"] == "queued"

    services_stack.start_worker()
    done = wait_status(api, job["id"], {"succeeded", "failed", "cancelled"}, 300, services_stack)
    ckpt_ids = check_succeeded_job(api, done, tiny_model_dir, tmp_path)  # the download followed a presigned URL
    content = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints/{ckpt_ids[0]}/content")
    assert content.status_code == 302 and content.headers["location"].startswith(s3["S3_ENDPOINT_URL"])

    with create_engine(pg_url).connect() as conn:  # the truth is in Postgres
        row = conn.execute(text("select status, lease_epoch from jobs where id = :id"), {"id": job["id"]}).one()
    assert tuple(row) == ("succeeded", 1)
    s3c = boto3.client(
        "s3",
        endpoint_url=s3["S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    keys = [o["Key"] for o in s3c.list_objects_v2(Bucket=s3["S3_BUCKET"])["Contents"]]
    project = done["organization_id"]  # the default project: this stack is in open mode (no keys)
    assert any(k.startswith(f"projects/{project}/jobs/{job['id']}/checkpoints/") and k.endswith(".tar") for k in keys)
    assert f"projects/{project}/files/{done['training_file']}.jsonl" in keys


def test_postgres_schema_matches_the_models(pg_url: str) -> None:
    from tests.helpers import alembic_check

    alembic_check(pg_url)


def test_cancel_stops_a_running_job_between_steps(worker: Stack, api: httpx.Client) -> None:
    job = submit(api, max_steps=500, checkpoint_interval=0)
    deadline = time.monotonic() + 240
    while api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["steps_done"] < 1:
        assert time.monotonic() < deadline, worker.logs()
        time.sleep(0.5)
    cancelling = api.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").json()
    assert cancelling["status"] in ("cancelling", "cancelled")
    done = wait_status(api, job["id"], {"cancelled", "failed", "succeeded"}, 120, worker)
    assert done["status"] == "cancelled" and done["steps_done"] < 500
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert "Cancellation requested; the job stops after the current step" in messages
    assert any(m.startswith("Stopped after step") for m in messages)
    again = api.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "cancelled"


def test_a_grader_that_always_raises_fails_the_job_with_the_reason(worker: Stack, api: httpx.Client) -> None:
    f = submit(api)["training_file"]
    from tests.helpers import job_body
    from tests.tiny_model import TINY_ID

    body = job_body(TINY_ID, f)
    body["method"]["reinforcement"]["grader"]["source"] = "def grade(sample, item):\n    return 1 / 0\n"
    job = api.post("/v1/fine_tuning/jobs", json=body).json()
    done = wait_status(api, job["id"], {"failed", "succeeded", "cancelled"}, 240, worker)
    assert done["status"] == "failed"
    assert done["error"]["code"] == "grader_error"
    message = done["error"]["message"]
    assert "failed on 100% of completions at step 1" in message
    assert "ZeroDivisionError" in message and "training row " in message
    # a finished job cannot be cancelled
    r = api.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")
    assert r.status_code == 409 and r.json()["error"]["param"] == "fine_tuning_job_id"


def test_a_killed_training_process_resumes_from_its_last_checkpoint(
    worker: Stack, api: httpx.Client, pg_url: str
) -> None:
    """SIGKILL the Celery child mid-job: the message is requeued, waits out the dead lease, and the job resumes
    from its last registered checkpoint with one continuous, duplicate-free step sequence. Its usage is the sum of
    its two attempts, each measured to its worker's last contact (``check_usage_of_a_resumed_job``)."""
    import os
    import signal
    import subprocess

    job = submit(api, max_steps=30, checkpoint_interval=2)
    deadline = time.monotonic() + 240
    while api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["steps_done"] < 3:
        assert time.monotonic() < deadline, worker.logs()
        time.sleep(0.2)
    assert worker.worker is not None
    children = subprocess.run(["pgrep", "-P", str(worker.worker.popen.pid)], capture_output=True, text=True)
    killed_at = time.time()
    for pid in children.stdout.split():
        os.kill(int(pid), signal.SIGKILL)  # the training process dies; the Celery parent survives

    done = wait_status(api, job["id"], {"succeeded", "failed", "cancelled"}, 300, worker)
    assert done["status"] == "succeeded", done
    events = all_events(api, job["id"])
    steps = [e["data"]["step"] for e in events if e["type"] == "metrics"]
    assert steps == list(range(1, 31))  # no gap, no duplicate
    messages = [e["message"] for e in events]
    assert any(m.startswith("Resumed from step") and "after worker loss" in m for m in messages), messages
    assert any(m.startswith("Resumed from step") for m in messages), messages
    ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints", params={"limit": 100}).json()["data"]
    assert sorted(c["step_number"] for c in ckpts) == list(range(2, 31, 2))
    with create_engine(pg_url).connect() as conn:
        epoch = conn.execute(text("select lease_epoch from jobs where id = :id"), {"id": job["id"]}).scalar_one()
    assert epoch == 2
    check_usage_of_a_resumed_job(api, pg_url, done, events, killed_at)


USAGE = ("device_seconds", "steps", "sampled_tokens", "trained_tokens", "grader_calls", "grader_seconds")


def check_usage_of_a_resumed_job(
    api: httpx.Client, pg_url: str, done: dict[str, Any], events: list[dict[str, Any]], killed_at: float
) -> None:
    """The job's usage (GET /v1/usage, its ``usage`` field) is the sum of its two attempts' records in Postgres;
    each attempt's device-seconds run from its claim to its worker's last contact (the kill, the finish) within
    a heartbeat; the resumed attempt counts the steps it re-ran; another project sees none of it."""
    from sqlalchemy.orm import Session

    from api.core.errors import NotFound
    from api.core.settings import ApiSettings
    from api.usage.prices import price_book
    from api.usage.service import UsageFilter, usage_page

    with create_engine(pg_url).connect() as conn:
        rows = conn.execute(text("select * from usage_records where job_id = :id order by attempt"), {"id": done["id"]})
        first, second = (dict(r) for r in rows.mappings())
    resumed = next(e for e in events if e["message"].startswith("Resumed from step"))
    claimed = next(e for e in events if e["message"].startswith("Fine-tuning job started"))["created_at"]
    n = int(resumed["message"].split()[3])  # the checkpoint's step
    tokens = {e["data"]["step"]: e["data"]["tokens"] for e in events if e["type"] == "metrics"}
    assert (first["attempt"], second["attempt"], first["devices"], second["devices"]) == (1, 2, 1, 1)
    assert first["steps"] == first["last_step"] >= max(n, 3)  # the killed attempt: steps 1 … last_step
    assert first["trained_tokens"] == sum(tokens[s] for s in range(1, first["last_step"] + 1))
    assert (second["steps"], second["last_step"]) == (30 - n, 30)  # n + 1 … 30, the re-run ones included
    assert second["trained_tokens"] == sum(tokens[s] for s in range(n + 1, 31))  # exact resume: the same tokens
    assert first["grader_calls"] == 8 * first["steps"] and second["grader_calls"] == 8 * second["steps"]  # 2 × 4 × 1
    beat = 15 / 4 + 1  # the worker's heartbeat interval at LEASE_SECONDS=15, and events' whole seconds
    for row, start, end in ((first, claimed, killed_at), (second, resumed["created_at"], done["finished_at"])):
        assert abs(row["started_at"] - start) <= 1 and end - beat <= row["last_seen_at"] <= end + 1, (row, start, end)
        assert row["device_seconds"] == pytest.approx(row["devices"] * (row["last_seen_at"] - row["started_at"]))
        assert row["device_seconds"] > 0  # to the fraction of a second: an attempt killed in its first second too
        assert row["device_kind"].startswith("cpu"), row
    used = api.get("/v1/usage", params={"job_id": done["id"], "group_by": "job"}).json()
    assert [b["job_id"] for b in used["data"]] == [done["id"]] and used["totals"]["attempts"] == 2
    for k in USAGE:
        assert used["totals"][k] == pytest.approx(first[k] + second[k]) == done["usage"][k], k
    assert used["totals"]["steps"] == first["last_step"] + 30 - n >= 30
    # no prices set: the cost is device-hours, the job's the sum of its two attempts' (killed, resumed)
    attempts = api.get("/v1/usage", params={"job_id": done["id"], "group_by": "attempt"}).json()["data"]
    assert sorted(b["attempt"] for b in attempts) == [1, 2]
    cost = done["usage"]["cost"]
    assert cost["unit"] == "device_hour" and cost["amount"] == pytest.approx(sum(b["cost"]["amount"] for b in attempts))
    assert cost["amount"] == pytest.approx((first["device_seconds"] + second["device_seconds"]) / 3600, abs=1e-8)
    with Session(create_engine(pg_url)) as session:  # the project scope of the same query, as another project
        book = price_book(session, ApiSettings())  # no prices: costs in device-hours
        theirs = usage_page(session, UsageFilter("proj-another"), "job", 100, book)
        assert theirs.data == [] and theirs.totals.steps == theirs.totals.device_seconds == 0
        with pytest.raises(NotFound):
            usage_page(session, UsageFilter("proj-another", job_id=done["id"]), "day", 100, book)
