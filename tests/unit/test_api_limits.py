"""Limits: the per-key rate limit (429 + Retry-After) and the per-project quota of unfinished jobs."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.settings import ApiSettings
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
