"""``POST /v1/fine_tuning/jobs/estimate`` through the API on a fresh SQLite schema: a body checked as a create is,
the stated fallback with no history, and a calibration from a finished job's usage records once there is one."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, update
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.db.models import Job, JobStatus, UsageRecord, now
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

AUTH = {"Authorization": "Bearer t0k"}
ESTIMATE = "/v1/fine_tuning/jobs/estimate"
KIND = "cpu (Test CPU)"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"price_device_hour": {"cpu": 3.6}}


def a_file(client: TestClient) -> str:
    f = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    return str(f.json()["id"])


def test_an_estimate_is_checked_as_a_create_and_stores_nothing(client: TestClient) -> None:
    file_id = a_file(client)
    bad = client.post(ESTIMATE, json=job_body("no-such-model", file_id))
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "model"
    bad = client.post(ESTIMATE, json=job_body(TINY_ID, file_id, batch_size=999))
    assert bad.status_code == 422 and "batch_size" in bad.json()["error"]["param"]
    est = client.post(ESTIMATE, json=job_body(TINY_ID, file_id), params={"device_kind": KIND})
    assert est.status_code == 200, est.text
    e = est.json()
    assert (e["confidence"], e["device_kind"], e["unit"]) == ("low", KIND, "USD")
    assert "fallback" in e["basis"] and e["drivers"]["steps"] == 3 and e["drivers"]["prompts_per_step"] == 2
    span = e["device_seconds"]
    assert span["low"] == pytest.approx(span["expected"] / 2, abs=0.1)
    assert span["high"] == pytest.approx(span["expected"] * 2, abs=0.1)
    assert e["cost"]["expected"] == pytest.approx(span["expected"] / 1000, rel=1e-2)  # 3.6 USD an hour
    assert client.get("/v1/fine_tuning/jobs").json()["data"] == []  # nothing stored


def test_a_finished_job_calibrates_the_next_estimate(client: TestClient, settings: ApiSettings) -> None:
    file_id = a_file(client)
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, file_id, max_steps=4)).json()
    t = now()
    # what its worker's usage record held: 4 steps of 2 prompts × 4 samples × 6 tokens at most, 3 of them used
    record = UsageRecord(
        id="usage-1", project_id=job["organization_id"], kind="job", subject_id=job["id"], job_id=job["id"],
        attempt=1, day="2026-12-07", device_kind=KIND, devices=1, started_at=t - 30, last_seen_at=t,
        device_seconds=30.0, steps=4, last_step=4, sampled_tokens=96, trained_tokens=96, grader_calls=32,
        grader_seconds=0.32, eval_tokens=0, inference_tokens=0, sampling_seconds=12.0, training_seconds=8.0,
        eval_seconds=0.0,
    )  # fmt: skip
    engine = create_engine(settings.db_url)
    with Session(engine) as s:
        s.add(record)
        s.execute(update(Job).where(Job.id == job["id"]).values(status=JobStatus.succeeded))
        s.commit()
    e = client.post(ESTIMATE, json=job_body(TINY_ID, file_id, max_steps=8)).json()
    assert e["device_kind"] == KIND  # the kind its last job ran on
    assert e["confidence"] == "medium" and e["basis"].startswith(f"calibrated from 1 finished job(s) of {TINY_ID}")
    d = e["drivers"]
    assert d["completion_tokens_per_sample"] == pytest.approx(3.0)  # 96 tokens / (4 × 2 × 4) of max 6 → 50 %
    # the same shape, twice the steps: sampling, update and scoring twice over, the setup (30 − 20.32 s) once
    assert e["device_seconds"]["expected"] == pytest.approx(9.68 + 2 * 20.32, abs=0.1)
    assert e["device_seconds"]["low"] == pytest.approx(e["device_seconds"]["expected"] * 0.75, abs=0.1)
