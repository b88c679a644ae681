"""One job on several processes, through the real stack (API, Postgres, Redis, S3, Celery workers, torchrun on
gloo): on 2 devices of one worker, surviving a rank killed mid-job, and on 2 "nodes" (two workers, one rank
each) joined over the c10d store on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.flow import all_events
from tests.integration.stack import Stack, wait_status

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DONE = {"succeeded", "failed", "cancelled"}


def steps_of(api: httpx.Client, job_id: str) -> list[int]:
    return [e["data"]["step"] for e in all_events(api, job_id) if e["type"] == "metrics"]


def rank_pids() -> dict[int, int]:
    """{global rank: pid} of the worker.rank processes on this machine (RANK from each one's environment)."""
    out = subprocess.run(["pgrep", "-f", "worker.rank"], capture_output=True, text=True).stdout.split()
    ranks = {}
    for pid in map(int, out):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        rank = next((int(v[5:]) for v in env if v.startswith(b"RANK=")), None)
        if rank is not None:
            ranks[rank] = pid
    return ranks


def wait_steps(api: httpx.Client, job_id: str, n: int, stack: Stack, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while api.get(f"/v1/fine_tuning/jobs/{job_id}").json()["steps_done"] < n:
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.2)


def submit_on(api: httpx.Client, devices: int, nodes: int, **hp: Any) -> dict[str, Any]:
    """A job asking for ``devices`` × ``nodes`` ranks (batch_size 2: one prompt per rank per step)."""
    from tests.helpers import ARITH_ROWS, job_body, jsonl
    from tests.tiny_model import TINY_ID

    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    body = job_body(TINY_ID, f.json()["id"], **hp) | {"resources": {"devices": devices, "nodes": nodes}}
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["resources"] == {"devices": devices, "nodes": nodes, "rollout_devices": 0}
    return r.json()


def test_a_job_on_two_devices_trains_under_torchrun(
    worker: Stack, api: httpx.Client, tiny_model_dir: Path, tmp_path: Path
) -> None:
    job = submit_on(api, 2, 1)
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", (done, worker.logs())
    ex = done["execution"]
    assert (ex["world_size"], ex["ranks_per_node"], ex["backend"], ex["device"]) == (2, 2, "gloo", "cpu"), ex
    assert steps_of(api, job["id"]) == [1, 2, 3]
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert any(
        m.startswith(f"Training {job['model']} with GRPO on 2 ranks (1 node × 2) under torchrun") for m in messages
    )
    assert any(" × 2 ranks (1 node × 2, gloo)" in m for m in messages), messages
    ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert [c["step_number"] for c in ckpts] == [3, 2]
    metrics = [e for e in all_events(api, job["id"]) if e["type"] == "metrics"]
    assert all(m["data"]["sampling"]["groups_trained"] == 2 for m in metrics)  # both ranks' prompts gathered
    assert done["trained_tokens"] == sum(m["data"]["tokens"] for m in metrics)
    assert rank_pids() == {}  # nothing of the job is left running


def test_a_rank_killed_mid_job_resumes_from_the_checkpoint(worker: Stack, api: httpx.Client, pg_url: str) -> None:
    """SIGKILL rank 1: torchrun stops rank 0 and exits non-zero; the worker reports an infrastructure failure, the
    API retries the job, and the next attempt resumes from the last registered checkpoint: steps 1..N once."""
    from tests.integration.test_faults import epoch_of

    job = submit_on(api, 2, 1, max_steps=12, checkpoint_interval=2)
    wait_steps(api, job["id"], 3, worker)
    pids = rank_pids()
    assert set(pids) == {0, 1}, pids
    os.kill(pids[1], signal.SIGKILL)
    done = wait_status(api, job["id"], DONE, 400, worker)
    assert done["status"] == "succeeded", (done, worker.logs())
    assert steps_of(api, job["id"]) == list(range(1, 13))  # no step missing, none recorded twice
    messages = [e["message"] for e in all_events(api, job["id"])]
    failed = next(m for m in messages if m.startswith("Attempt 1 of 3 failed"))
    assert "died without an error of its own" in failed, failed
    resumed = [m for m in messages if m.startswith("Resumed from step")]
    assert resumed and "after a failed attempt" in resumed[0], messages
    assert int(resumed[0].split()[3]) % 2 == 0  # from a registered checkpoint (every 2 steps)
    assert epoch_of(pg_url, job["id"]) == 2
    assert done["execution"]["world_size"] == 2


def test_two_nodes_join_one_job_over_the_rendezvous(worker: Stack, api: httpx.Client) -> None:
    """Two workers on this machine, one rank each: the claiming worker publishes its torchrun's endpoint, the API
    rings a join doorbell, the other (idle) worker joins as node 1, and the job trains on both."""
    second = worker.extra_worker(7)
    try:
        time.sleep(3)  # both workers are listening
        job = submit_on(api, 1, 2)
        done = wait_status(api, job["id"], DONE, 300, worker)
    finally:
        second.stop()
    assert done["status"] == "succeeded", (done, worker.logs(), second.tail())
    ex = done["execution"]
    assert (ex["world_size"], ex["ranks_per_node"], ex["backend"]) == (2, 1, "gloo"), ex
    assert steps_of(api, job["id"]) == [1, 2, 3]
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert any(m.startswith("Waiting for 1 more node") for m in messages), messages
    assert any(m.startswith("Node 1 of 2 joined") for m in messages), messages
    assert any(" × 2 ranks (2 nodes × 1, gloo)" in m for m in messages), messages


def test_pause_and_cancel_reach_every_rank_at_a_step_boundary(worker: Stack, api: httpx.Client) -> None:
    """A job on 2 devices paused mid-run: every rank checkpoints the finished steps and exits (none left running);
    resumed, it continues from that step on 2 ranks; cancelled, it stops on all of them, and no step is recorded
    twice or skipped before the stop."""
    job = submit_on(api, 2, 1, max_steps=40, checkpoint_interval=100)
    wait_steps(api, job["id"], 3, worker)
    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/pause").json()["status"] in ("pausing", "paused")
    paused = wait_status(api, job["id"], {"paused", *DONE}, 240, worker)
    assert paused["status"] == "paused", (paused, worker.logs())
    ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert ckpts and ckpts[0]["step_number"] == paused["steps_done"]  # both ranks stopped after the same step
    assert rank_pids() == {}

    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/resume").json()["status"] == "queued"
    wait_steps(api, job["id"], paused["steps_done"] + 2, worker)
    assert set(rank_pids()) == {0, 1}
    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").json()["status"] in ("cancelling", "cancelled")
    done = wait_status(api, job["id"], DONE, 240, worker)
    assert done["status"] == "cancelled", (done, worker.logs())
    steps = steps_of(api, job["id"])
    assert steps == list(range(1, len(steps) + 1)) and len(steps) < 40, steps
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert any(m.startswith(f"Resumed from step {paused['steps_done']} after a pause") for m in messages), messages
    assert done["execution"]["world_size"] == 2
    deadline = time.monotonic() + 30
    while rank_pids() and time.monotonic() < deadline:  # the cancelled ranks exit right after their last step
        time.sleep(0.2)
    assert rank_pids() == {}
