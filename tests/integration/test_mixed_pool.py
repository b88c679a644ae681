"""A job and a training-API session in one pool (worker.pool lending its resident, grpo_core.training_api.shared), on
the real stack: the API, Postgres, Redis, moto's S3 and one Celery worker (concurrency 1) with POOL_TENANTS=2.

A GRPO job of the tiny model trains; meanwhile a session of another project, driven by the ``tinker`` SDK, creates
a run of the job's adapter shape. The busy worker can serve it only by taking it into the job's pool: the fleet view
shows one worker with a job and a session, the session's run trains on the job's resident base between the job's
steps, and the job goes on. The run's losses and final log-probs are bit-identical (fp32) to the same run trained
later on a worker of its own; the jobs' side (adapters bit for bit while a run shares their resident) is
tests/unit/test_pool_lent.py's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import tinker

from tests.helpers import ARITH_ROWS, PY_GRADER, job_body, jsonl
from tests.integration.flow import all_events
from tests.integration.stack import Stack, wait_status
from tests.integration.test_pooled_jobs import DONE, steps_done, wait_for
from tests.integration.test_pooled_sessions import ADAM, DATA, STEPS, sessions, two_projects
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RANK = 16  # a job's default LoRA (rank 16, α 32, all linear layers) is a run's of rank 16 with both kinds trained


@pytest.fixture(scope="module")
def stack(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Stack, dict[str, str]]]:
    state = tmp_path_factory.mktemp("state")
    with two_projects(s3, catalog_dir, logs_dir, state, {"POOL_TENANTS": "2"}) as pooled:
        yield pooled  # the first test starts the worker once its job is queued


def submit(api: httpx.Client, max_steps: int = 400) -> dict[str, Any]:
    """A long job of the tiny model in the precision a session's run gets on this machine ("auto": bf16 where the
    CPU has it), so that the run fits the job's resident."""
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    body = job_body(
        TINY_ID, f.json()["id"], grader=PY_GRADER, precision="auto", max_steps=max_steps, checkpoint_interval=0
    )
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def train_run(s: Stack, key: str) -> tuple[str, list[float], list[list[float]]]:
    """A session of one run of rank RANK trained STEPS steps: its id, its losses and its final log-probs."""
    sc = tinker.ServiceClient(base_url=s.url, api_key=f"tml-{key}")
    try:
        tc = sc.create_lora_training_client(base_model=TINY_ID, rank=RANK, seed=3).result(timeout=120)
        losses = []
        for _ in range(STEPS):
            fb = tc.forward_backward(DATA["a"], "cross_entropy")
            tc.optim_step(ADAM).result(timeout=120)
            losses.append(float(fb.result(timeout=120).metrics["loss:sum"]))
        out = tc.forward(DATA["a"], "cross_entropy").result(timeout=120)
        return tc.model_id.rsplit(":train:", 1)[0], losses, [x["logprobs"].tolist() for x in out.loss_fn_outputs]
    finally:
        sc.close("success").result(timeout=30)


def test_a_session_joins_a_pool_of_jobs_and_trains_on_its_resident_as_alone(
    stack: tuple[Stack, dict[str, str]],
) -> None:
    s, keys = stack
    with httpx.Client(base_url=s.url, timeout=30, headers={"Authorization": f"Bearer {keys['team-a']}"}) as a:
        job = submit(a)
        s.start_worker()
        wait_for(lambda: steps_done(a, job["id"]) >= 1, s)
        fleet: list[list[dict[str, int]]] = []
        watching = threading.Event()

        def watch() -> None:  # the operator's view while the session trains
            admin = {"Authorization": f"Bearer {s.env['ADMIN_TOKEN']}"}
            while not watching.wait(0.5):
                fleet.append(httpx.get(f"{s.url}/v1/admin/fleet", headers=admin, timeout=30).json()["workers"])

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            session_id, losses, logprobs = train_run(s, keys["team-b"])  # served only if the job's pool takes it
        finally:
            watching.set()
            watcher.join()
        during = steps_done(a, job["id"])
        assert a.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["status"] == "running", "the job went on meanwhile"
        assert any(w["jobs"] == 1 and w["sessions"] == 1 and w["projects"] == 2 for ws in fleet for w in ws), fleet
        wait_for(lambda: steps_done(a, job["id"]) > during, s)  # and goes on after the session ends
        messages = [e["message"] for e in all_events(a, job["id"])]
        assert any("A training-API session now shares this worker: 2 tenants" in m for m in messages), messages
        assert a.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").status_code == 200
        assert wait_status(a, job["id"], DONE, 120, s)["status"] == "cancelled"
    said = (s.log_dir / "worker.log").read_text(errors="replace")
    assert "a training run shares the resident base of a pool of jobs" in said  # one copy of the base weights
    row = sessions(s, [session_id])[session_id]
    assert row.shared and row.device_seconds > 0
    assert losses[-1] < losses[0]
    alone_id, alone_losses, alone_logprobs = train_run(s, keys["team-b"])  # the worker free: a session alone
    assert alone_id != session_id and (alone_losses, alone_logprobs) == (losses, logprobs)  # bit for bit


def test_a_worker_serving_a_session_takes_a_job_onto_its_runs_base(stack: tuple[Stack, dict[str, str]]) -> None:
    """The reverse: the worker is serving a session when a job of its run's base model and adapter shape is queued;
    the session's pool takes the job onto the base the run loaded, the job trains to the end while the session's
    run trains, and the run's results are bit-identical to the same run alone."""
    s, keys = stack
    if s.worker is None:
        s.start_worker()
    sc = tinker.ServiceClient(base_url=s.url, api_key=f"tml-{keys['team-b']}")
    try:
        tc = sc.create_lora_training_client(base_model=TINY_ID, rank=RANK, seed=3).result(timeout=120)
        with httpx.Client(base_url=s.url, timeout=30, headers={"Authorization": f"Bearer {keys['team-a']}"}) as a:
            job = submit(a, max_steps=6)  # rings while the worker serves the session: only its pool can take it
            wait_for(lambda: steps_done(a, job["id"]) >= 1, s)
            losses = []
            for _ in range(STEPS):  # the run trains while the job does
                fb = tc.forward_backward(DATA["a"], "cross_entropy")
                tc.optim_step(ADAM).result(timeout=120)
                losses.append(float(fb.result(timeout=120).metrics["loss:sum"]))
            out = tc.forward(DATA["a"], "cross_entropy").result(timeout=120)
            done = wait_status(a, job["id"], DONE, 240, s)
            assert done["status"] == "succeeded", done
            steps = [e["data"]["step"] for e in all_events(a, job["id"]) if e["type"] == "metrics"]
            assert steps == list(range(1, 7))
    finally:
        sc.close("success").result(timeout=30)
    said = (s.log_dir / "worker.log").read_text(errors="replace")
    assert "a pool of jobs opens on the resident base of this worker's training runs" in said
    _, alone_losses, alone_logprobs = train_run(s, keys["team-b"])
    assert (alone_losses, alone_logprobs) == (losses, [x["logprobs"].tolist() for x in out.loss_fn_outputs])
