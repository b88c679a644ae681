"""Every job state transition and every worker write, with the stale fencing token refused at each one.

The API (SQLite schema built by Alembic) with its internal worker endpoints; the reaper's pass is called directly
with a recording doorbell. Real processes being killed is tests/integration's business.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.reaper import reap
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

AUTH = {"Authorization": "Bearer t0k"}
CKPT = {"step_number": 1, "object_key": "a.tar", "state_key": "a.ckpt.tar", "metrics": {}}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "retry_backoff_seconds": 30, "requeue_after_seconds": 60}


class Job:
    """One job seen from the user's API and from a worker's internal API."""

    def __init__(self, client: TestClient, settings: ApiSettings) -> None:
        self.c, self.settings = client, settings
        fid = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
        self.id = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid.json()["id"])).json()["id"]
        self.url = f"/internal/jobs/{self.id}"

    def claim(self, claim_id: str = "claim-0001") -> Any:
        return self.c.post(f"{self.url}/claim", json={"worker_id": "w", "claim_id": claim_id}, headers=AUTH)

    def write(self, kind: str, epoch: int, **body: Any) -> Any:
        return self.c.post(f"{self.url}/{kind}", json={"epoch": epoch, **body}, headers=AUTH)

    def user(self, action: str) -> Any:
        return self.c.post(f"/v1/fine_tuning/jobs/{self.id}/{action}")

    def status(self) -> str:
        return self.c.get(f"/v1/fine_tuning/jobs/{self.id}").json()["status"]

    def sql(self, statement: str) -> None:
        with create_engine(self.settings.db_url).begin() as conn:
            conn.execute(text(statement), {"id": self.id})

    def messages(self) -> list[str]:
        return [e["message"] for e in self.c.get(f"/v1/fine_tuning/jobs/{self.id}/events?limit=100").json()["data"]]


WRITES = {
    "heartbeat": {},
    "events": {"events": [{"message": "late"}]},
    "checkpoints": CKPT,
    "finish": {"status": "succeeded"},
}


def assert_fenced(job: Job, epoch: int) -> None:
    """Every worker write with ``epoch`` is refused as stale."""
    for kind, body in WRITES.items():
        r = job.write(kind, epoch, **body)
        assert r.status_code == 409 and r.json()["error"]["code"] == "stale_lease", (kind, r.text)


def test_a_new_claim_fences_out_the_old_worker_on_every_write(client: TestClient, settings: ApiSettings) -> None:
    job = Job(client, settings)
    assert job.claim().json()["epoch"] == 1 and job.status() == "running"
    assert job.write("checkpoints", 1, **CKPT).status_code == 200
    job.sql("update jobs set lease_expires_at = 0 where id = :id")  # the worker is presumed dead
    second = job.claim("claim-0002").json()
    assert second["epoch"] == 2 and second["resume"]["step"] == 1
    assert_fenced(job, 1)
    assert job.write("heartbeat", 2).status_code == 200  # the current one still writes
    assert job.claim("claim-0002").json()["epoch"] == 2  # its retried claim gets the same lease


@pytest.mark.parametrize(
    ("action", "final", "request_state"),
    [("cancel", "cancelled", "cancelling"), ("pause", "paused", "pausing")],
)
def test_stop_requests_reach_the_worker_and_only_the_current_epoch_finishes(
    client: TestClient, settings: ApiSettings, action: str, final: str, request_state: str
) -> None:
    job = Job(client, settings)
    job.claim()
    assert job.user(action).json()["status"] == request_state
    assert job.user(action).json()["status"] == request_state  # idempotent
    stop = job.write("events", 1, events=[{"message": "step"}]).json()
    assert stop["stop"] == action and stop["added"] == 1
    assert job.write("heartbeat", 1).json()["stop"] == action
    assert job.write("finish", 0, status=final).status_code == 409  # a stale epoch cannot finish it
    assert job.write("finish", 1, status=final).json()["status"] == final
    assert job.status() == final
    assert_fenced(job, 1)  # nothing writes after the end


def test_pause_resume_continues_from_the_checkpoint_with_fresh_attempts(
    client: TestClient, settings: ApiSettings
) -> None:
    job = Job(client, settings)
    assert job.user("pause").json()["status"] == "paused"  # queued -> paused at once
    assert job.claim().status_code == 409  # a paused job is not claimable
    assert job.user("resume").json()["status"] == "queued"
    job.claim()
    assert "Fine-tuning job started (attempt 1 of 3, worker w)" in job.messages()  # paused before it ever ran
    job.write("checkpoints", 1, **CKPT)
    job.user("pause")
    job.write("finish", 1, status="paused")
    job.sql("update jobs set attempts = 3 where id = :id")  # resume gives a fresh attempt budget
    assert job.user("resume").json()["status"] == "queued"
    claim = job.claim("claim-0002").json()
    assert claim["epoch"] == 2 and claim["resume"]["step"] == 1
    assert "Resumed from step 1 after a pause (attempt 1 of 3, worker w)" in job.messages()
    assert_fenced(job, 1)
    assert job.user("resume").status_code == 409  # only a paused job resumes
    assert job.user("cancel").json()["status"] == "cancelling"


def test_cancel_of_a_paused_job_is_immediate(client: TestClient, settings: ApiSettings) -> None:
    job = Job(client, settings)
    job.user("pause")
    assert job.user("cancel").json()["status"] == "cancelled"
    assert job.user("pause").status_code == 409


def test_retryable_failure_requeues_with_backoff_until_attempts_run_out(
    client: TestClient, settings: ApiSettings
) -> None:
    job = Job(client, settings)
    for attempt in (1, 2):
        job.sql("update jobs set not_before = null where id = :id")  # skip the backoff wait
        assert job.claim(f"claim-000{attempt}").json()["epoch"] == attempt
        body = {"status": "failed", "error_code": "infrastructure_error", "error_message": "S3 down", "retryable": True}
        assert job.write("finish", attempt, **body).json()["status"] == "queued"
        held = job.claim("claim-early")
        assert held.status_code == 409 and int(held.headers["Retry-After"]) > 0  # backoff 30 s, then 60 s
        assert_fenced(job, attempt)
    assert any("Attempt 2 of 3 failed (S3 down); retrying in 60 s" in m for m in job.messages())
    restarted = "Restarted from the beginning after a failed attempt: no checkpoint yet (attempt 2 of 3, worker w)"
    assert restarted in job.messages()
    job.sql("update jobs set not_before = null where id = :id")
    job.claim("claim-0003")
    body = {"status": "failed", "error_code": "infrastructure_error", "error_message": "S3 down", "retryable": True}
    done = job.write("finish", 3, **body).json()
    assert done["status"] == "failed"
    err = client.get(f"/v1/fine_tuning/jobs/{job.id}").json()["error"]
    assert err["code"] == "infrastructure_error" and err["message"] == "S3 down (after 3 attempts)"


@pytest.mark.parametrize(("action", "final"), [("cancel", "cancelled"), ("pause", "paused")])
def test_a_retryable_failure_of_a_job_asked_to_stop_ends_it_as_asked(
    client: TestClient, settings: ApiSettings, action: str, final: str
) -> None:
    """A multi-process job's ranks killed by the stop grace look lost (retryable): the job must stop, not retry."""
    job = Job(client, settings)
    job.claim("claim-0001")
    assert client.post(f"/v1/fine_tuning/jobs/{job.id}/{action}").status_code == 200
    body = {"status": "failed", "error_code": "infrastructure_error", "error_message": "ranks lost", "retryable": True}
    assert job.write("finish", 1, **body).json()["status"] == final
    assert client.get(f"/v1/fine_tuning/jobs/{job.id}").json()["status"] == final


def test_a_worker_shutting_down_hands_the_job_back_without_using_an_attempt(
    client: TestClient, settings: ApiSettings
) -> None:
    job = Job(client, settings)
    for epoch in (1, 2, 3, 4):  # more hand-backs than max_attempts: none of them counts
        claim = job.claim(f"claim-000{epoch}").json()
        assert claim["epoch"] == epoch, claim
        job.write("checkpoints", epoch, **{**CKPT, "step_number": epoch})
        assert job.write("finish", epoch, status="preempted").json()["status"] == "queued"
        assert_fenced(job, epoch)
    messages = job.messages()
    assert sum(m.startswith("Its worker is shutting down: back in the queue") for m in messages) == 4
    assert "Resumed from step 3 after its worker shut down (attempt 1 of 3, worker w)" in messages
    job.claim("claim-0005")
    job.sql("update jobs set lease_expires_at = 0 where id = :id")  # a worker lost without notice still counts
    assert job.claim("claim-0006").json()["epoch"] == 6
    assert "Resumed from step 4 after worker loss at step 0 (attempt 2 of 3, worker w)" in job.messages()


def test_a_stop_request_during_a_shutdown_is_honoured(client: TestClient, settings: ApiSettings) -> None:
    for action, final in (("cancel", "cancelled"), ("pause", "paused")):
        job = Job(client, settings)
        job.claim()
        job.write("checkpoints", 1, **CKPT)
        assert job.user(action).json()["status"] in ("cancelling", "pausing")
        assert job.write("finish", 1, status="preempted").json()["status"] == final
    # handed back, then paused and resumed by the user: the next claim says why it really resumes
    job.user("resume")
    job.claim("claim-0002")
    job.write("finish", 2, status="preempted")
    job.user("pause")
    job.user("resume")
    job.claim("claim-0003")
    assert "Resumed from step 1 after a pause (attempt 1 of 3, worker w)" in job.messages()


def test_a_user_error_is_never_retried(client: TestClient, settings: ApiSettings) -> None:
    job = Job(client, settings)
    job.claim()
    body = {"status": "failed", "error_code": "invalid_job", "error_message": "bad row"}
    assert job.write("finish", 1, **body).json()["status"] == "failed"
    assert job.claim("claim-0002").json()["error"]["code"] == "not_claimable"


class Rung:
    """A doorbell that records the job ids it is rung for (and the join doorbells, apart)."""

    def __init__(self, rung: list[str]) -> None:
        self.rung = rung
        self.joins: list[tuple[str, int]] = []

    def ring(self, job_id: str) -> None:
        self.rung.append(job_id)

    def join(self, job_id: str, epoch: int) -> None:
        self.joins.append((job_id, epoch))


def _reap(settings: ApiSettings) -> tuple[dict[str, int], list[str]]:
    rung: list[str] = []
    with Session(create_engine(settings.db_url)) as session:
        return reap(session, Rung(rung), settings), rung


def test_reaper_requeues_a_lost_worker_once_per_expiry_then_gives_up(client: TestClient, settings: ApiSettings) -> None:
    job = Job(client, settings)
    job.claim()
    t = int(time.time())  # enqueued 10 min ago, claimed, and its lease ran out a second ago
    job.sql(f"update jobs set enqueued_at = {t - 600}, lease_expires_at = {t - 1}, steps_done = 4 where id = :id")
    counts, rung = _reap(settings)
    assert counts["requeued_lost_worker"] == 1 and rung == [job.id]
    assert _reap(settings)[1] == []  # once per expiry, not every pass
    assert "Worker lost at step 4 (lease expired); re-queued for attempt 2 of 3" in job.messages()
    assert job.claim("claim-0002").json()["epoch"] == 2
    assert_fenced(job, 1)
    job.sql("update jobs set lease_expires_at = 1, attempts = 3 where id = :id")
    counts, rung = _reap(settings)
    assert counts["failed_exhausted"] == 1 and rung == []
    body = client.get(f"/v1/fine_tuning/jobs/{job.id}").json()
    assert body["status"] == "failed" and body["error"]["code"] == "attempts_exhausted"
    assert_fenced(job, 2)


@pytest.mark.parametrize(("action", "final"), [("cancel", "cancelled"), ("pause", "paused")])
def test_reaper_finishes_a_stop_whose_worker_is_gone(
    client: TestClient, settings: ApiSettings, action: str, final: str
) -> None:
    job = Job(client, settings)
    job.claim()
    job.user(action)
    job.sql("update jobs set lease_expires_at = 1 where id = :id")
    assert _reap(settings)[0]["finished_stopping"] == 1 and job.status() == final
    assert_fenced(job, 1)


def test_reaper_rings_again_for_a_queued_job_whose_doorbell_was_lost(client: TestClient, settings: ApiSettings) -> None:
    job = Job(client, settings)
    assert _reap(settings)[1] == []  # just enqueued: leave it
    job.sql("update jobs set enqueued_at = 1 where id = :id")  # e.g. Redis was flushed
    assert _reap(settings)[1] == [job.id]
    job.sql("update jobs set enqueued_at = null, not_before = 9999999999 where id = :id")  # backoff pending
    assert _reap(settings)[1] == []


def test_a_new_attempt_deletes_the_dead_attempts_unregistered_uploads(
    client: TestClient, settings: ApiSettings
) -> None:
    from runtime.storage import LocalStore

    store = LocalStore(settings.objects_dir)
    job = Job(client, settings)
    prefix = job.claim().json()["object_prefix"] + "checkpoints"  # projects/<project>/jobs/<job>/checkpoints
    src = settings.state_dir / "blob"
    src.write_bytes(b"x")
    for name in ("step-000002-e1.tar", "step-000002-e1.ckpt.tar", "step-000004-e1.tar", "step-000004-e1.ckpt.tar"):
        store.put_file(f"{prefix}/{name}", src)  # step 4 was uploaded, then the worker died before registering it
    reg = {
        "step_number": 2,
        "object_key": f"{prefix}/step-000002-e1.tar",
        "state_key": f"{prefix}/step-000002-e1.ckpt.tar",
    }
    assert job.write("checkpoints", 1, **reg, metrics={}).status_code == 200
    job.sql("update jobs set lease_expires_at = 0 where id = :id")
    assert job.claim("claim-0002").json()["resume"]["step"] == 2
    assert store.list_keys(prefix) == [f"{prefix}/step-000002-e1.ckpt.tar", f"{prefix}/step-000002-e1.tar"]
