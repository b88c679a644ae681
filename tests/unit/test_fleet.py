"""``GET /v1/admin/fleet`` (api.fleet): the workers holding live leases, each with its jobs and training sessions (a
pool's tenants), their base models and how many projects; what waits for a worker; the admin token only. The API
on its test database with workers played through the internal API."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from api.core.settings import ApiSettings
from tests.tiny_model import TINY_ID
from tests.unit.test_tenants import bearer, new_key
from tests.unit.test_usage import ADMIN, WORKER, Job

API = "/api/v1"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "admin_token": "adm1n"}


def session(client: TestClient, headers: dict[str, str], worker: str | None) -> str:
    """A training-API session with one run of the tiny model, held by ``worker`` (None: waiting for one)."""
    h = {"X-API-Key": headers["Authorization"].removeprefix("Bearer ")}
    sid = client.post(f"{API}/create_session", json={}, headers=h).json()["session_id"]
    body = {"session_id": sid, "model_seq_id": 0, "base_model": TINY_ID, "lora_config": {"rank": 4}}
    assert client.post(f"{API}/create_model", json=body, headers=h).status_code == 200
    if worker is not None:
        claim = {"worker_id": worker, "claim_id": f"c-{sid}"}
        assert client.post(f"/internal/training/sessions/{sid}/claim", json=claim, headers=WORKER).status_code == 200
    return sid


def test_the_fleet_shows_each_workers_tenants_and_what_waits(client: TestClient, settings: ApiSettings) -> None:
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    a, b = bearer(key_a), bearer(key_b)
    jobs = [Job(client, settings, a), Job(client, settings, b), Job(client, settings, a)]
    for job, worker in zip(jobs[:2], ("host:1", "host:1"), strict=True):
        r = client.post(f"{job.url}/claim", json={"worker_id": worker, "claim_id": f"c-{job.id}"}, headers=WORKER)
        assert r.status_code == 200, r.text
    session(client, b, "host:2")
    session(client, a, "host:1")
    session(client, a, None)

    assert client.get("/v1/admin/fleet", headers=a).status_code == 401  # a project key is not the admin token
    fleet = client.get("/v1/admin/fleet", headers=ADMIN).json()
    assert fleet["queued_jobs"] == 1 and fleet["waiting_sessions"] == 1
    assert [(w["worker_id"], w["jobs"], w["sessions"], w["tenants"], w["projects"]) for w in fleet["workers"]] == [
        ("host:1", 2, 1, 3, 2),  # a pool: two jobs of two projects and a session
        ("host:2", 0, 1, 1, 1),
    ]
    assert {m for w in fleet["workers"] for m in w["base_models"]} == {TINY_ID}
    scraped = client.get("/metrics").text  # the same, for Prometheus
    assert 'rft_worker_jobs{worker="host:1"} 2.0' in scraped
    assert 'rft_worker_sessions{worker="host:1"} 1.0' in scraped
    assert 'rft_worker_sessions{worker="host:2"} 1.0' in scraped

    with create_engine(settings.db_url).begin() as conn:  # host:1's leases run out: it is gone from the fleet
        conn.execute(text("UPDATE jobs SET lease_expires_at = 1 WHERE worker_id = 'host:1'"))
        conn.execute(text("UPDATE training_sessions SET lease_expires_at = 1 WHERE worker_id = 'host:1'"))
    fleet = client.get("/v1/admin/fleet", headers=ADMIN).json()
    assert [w["worker_id"] for w in fleet["workers"]] == ["host:2"]
