"""Fault injection with real processes: a flushed queue, a duplicated delivery to two workers, the API and
PostgreSQL restarted mid-job. (SIGKILL of the training process: test_services.py.) Every job must succeed with
steps 1..N recorded exactly once."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.integration.flow import all_events, submit
from tests.integration.stack import Stack, wait_status

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DONE = {"succeeded", "failed", "cancelled"}


def steps_of(api: httpx.Client, job_id: str) -> list[int]:
    return [e["data"]["step"] for e in all_events(api, job_id) if e["type"] == "metrics"]


def wait_steps(api: httpx.Client, job_id: str, n: int, stack: Stack, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while api.get(f"/v1/fine_tuning/jobs/{job_id}").json()["steps_done"] < n:
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.2)


def epoch_of(pg_url: str, job_id: str) -> int:
    with create_engine(pg_url).connect() as conn:
        return conn.execute(text("select lease_epoch from jobs where id = :id"), {"id": job_id}).scalar_one()


def test_a_flushed_queue_is_rung_again_by_the_reaper(services_stack: Stack, api: httpx.Client, redis_url: str) -> None:
    import redis

    services_stack.stop_worker()
    job = submit(api)
    redis.Redis.from_url(redis_url).flushdb()  # the doorbell is gone (Redis flushed, or a lost message)
    services_stack.start_worker()
    done = wait_status(api, job["id"], DONE, 300, services_stack)
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == [1, 2, 3]
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert "Not claimed yet; ringing the queue again (its message may have been lost)" in messages


def test_the_same_doorbell_delivered_to_two_workers_trains_once(
    worker: Stack, api: httpx.Client, pg_url: str, redis_url: str
) -> None:
    from api.core.queue import JobQueue
    from api.core.settings import ApiSettings

    second = worker.extra_worker(2)
    try:
        time.sleep(3)  # both workers are listening
        job = submit(api, max_steps=6)
        JobQueue(ApiSettings(broker_url=redis_url)).ring(job["id"])  # a duplicate delivery
        done = wait_status(api, job["id"], DONE, 300, worker)
    finally:
        second.stop()
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == list(range(1, 7))
    assert epoch_of(pg_url, job["id"]) == 1  # exactly one claim: the other delivery found nothing to claim
    starts = [e for e in all_events(api, job["id"]) if e["message"].startswith("Fine-tuning job started")]
    assert len(starts) == 1


def test_the_api_restarted_mid_job_the_worker_retries_and_the_job_succeeds(
    worker: Stack, api: httpx.Client, pg_url: str
) -> None:
    job = submit(api, max_steps=12, checkpoint_interval=3)
    wait_steps(api, job["id"], 2, worker)
    worker.stop_api()  # SIGTERM to uvicorn; the worker's next calls fail to connect
    time.sleep(4)
    worker.start_api()  # same port, same database
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == list(range(1, 13))
    assert epoch_of(pg_url, job["id"]) == 1  # the worker kept its lease through the outage


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("pg_ctlcluster") is None, reason="restarting PostgreSQL needs root"
)
def test_postgres_restarted_mid_job_the_job_succeeds(worker: Stack, api: httpx.Client, pg_url: str) -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    job = submit(api, max_steps=12, checkpoint_interval=3)
    wait_steps(api, job["id"], 2, worker)
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True, timeout=120)
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == list(range(1, 13))


def test_pause_then_resume_continues_from_the_checkpoint(worker: Stack, api: httpx.Client, pg_url: str) -> None:
    # 40 steps: the tiny model's steps take well under a second, and the pause must land before the end
    job = submit(api, max_steps=40, checkpoint_interval=100)
    wait_steps(api, job["id"], 3, worker)
    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/pause").json()["status"] in ("pausing", "paused")
    paused = wait_status(api, job["id"], {"paused", *DONE}, 240, worker)
    assert paused["status"] == "paused", paused
    ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert ckpts and ckpts[0]["step_number"] == paused["steps_done"]  # the pause saved the finished steps
    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/resume").json()["status"] == "queued"
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == list(range(1, 41))
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert any(m.startswith(f"Resumed from step {paused['steps_done']} after a pause") for m in messages), messages
    assert epoch_of(pg_url, job["id"]) == 2


def test_a_worker_killed_without_redelivery_is_recovered_by_the_reaper(
    worker: Stack, api: httpx.Client, pg_url: str, tmp_path: Path
) -> None:
    """SIGKILL the whole worker (parent and pool child): no Celery redelivery can happen before the new worker
    starts; the lease expires and the reaper rings the queue again."""
    import signal

    job = submit(api, max_steps=12, checkpoint_interval=2)
    wait_steps(api, job["id"], 3, worker)
    assert worker.worker is not None
    pids = [worker.worker.popen.pid, *worker.training_pids()]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    worker.worker = None
    worker.start_worker()
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == list(range(1, 13))
    assert epoch_of(pg_url, job["id"]) == 2


def test_a_worker_shutting_down_hands_its_job_to_the_next_worker(worker: Stack, api: httpx.Client, pg_url: str) -> None:
    """SIGTERM to the Celery main process only (`docker stop`, a pod's termination, a scale-in): the running job
    stops at the next step boundary, checkpoints and goes back to the queue without using up an attempt; the
    worker exits after that step, not after the job; the next worker resumes from that step."""
    import signal

    job = submit(api, max_steps=60, checkpoint_interval=100)
    wait_steps(api, job["id"], 3, worker)
    assert worker.worker is not None
    t0 = time.monotonic()
    worker.worker.popen.send_signal(signal.SIGTERM)
    assert worker.worker.popen.wait(timeout=120) == 0, worker.logs()
    exited_after = time.monotonic() - t0
    worker.worker = None
    handed = api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()
    assert handed["status"] == "queued" and 3 <= handed["steps_done"] < 60, (handed, exited_after)
    ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert [c["step_number"] for c in ckpts] == [handed["steps_done"]]  # saved on the way out
    worker.start_worker()
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", done
    assert steps_of(api, job["id"]) == list(range(1, 61))  # nothing lost, nothing trained twice
    messages = [e["message"] for e in all_events(api, job["id"])]
    resumed = f"Resumed from step {handed['steps_done']} after its worker shut down (attempt 1 of 3"
    assert any(m.startswith(resumed) for m in messages), messages
    assert epoch_of(pg_url, job["id"]) == 2
