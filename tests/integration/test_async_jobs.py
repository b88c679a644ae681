"""An asynchronous job (max_staleness 1) through the real API, Celery worker, Postgres, Redis and S3: the sampler
process runs inside the worker's training process, a pause discards the batch in flight and the resumed job trains
every step once."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.flow import all_events, submit
from tests.integration.stack import Stack, wait_status
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DONE = {"succeeded", "failed", "cancelled"}


def test_an_asynchronous_job_pauses_resumes_and_trains_each_step_once(worker: Stack, api: httpx.Client) -> None:
    # A step of the tiny model at k = 1 takes about a second: the pause goes in after the first and the job has 11
    # more, so a loaded machine (the API answering slowly) cannot let it finish before the pause reaches the worker.
    job = submit(api, max_steps=12, max_staleness=1, checkpoint_interval=100)
    deadline = time.monotonic() + 300
    while api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["steps_done"] < 1:
        assert time.monotonic() < deadline, worker.logs()
        time.sleep(0.2)
    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/pause").json()["status"] in ("pausing", "paused")
    paused = wait_status(api, job["id"], {"paused", *DONE}, 240, worker)
    assert paused["status"] == "paused", (paused, worker.logs())
    assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/resume").json()["status"] == "queued"
    done = wait_status(api, job["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", (done, worker.logs())

    events = all_events(api, job["id"])
    metrics = [e["data"] for e in events if e["type"] == "metrics"]
    assert [m["step"] for m in metrics] == list(range(1, 13))  # none lost, none twice
    for m in metrics:
        lags = [int(k) for k in m["off_policy"]["staleness"]]
        assert max(lags) <= 1 and m["off_policy"]["max_staleness"] == 1, m["off_policy"]
        assert m["timing"]["step"]["waiting"] is not None
    ex = done["execution"]
    assert ex["max_staleness"] == 1 and "own process" in ex["sampler"], ex
    messages = [e["message"] for e in events]
    assert any("asynchronous, samples at most 1 step(s) old" in m for m in messages), messages
    assert any(m.startswith(f"Resumed from step {paused['steps_done']} after a pause") for m in messages), messages


def test_a_job_whose_sampler_has_a_device_of_its_own_trains_on_one_rank(worker: Stack, api: httpx.Client) -> None:
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    body = job_body(TINY_ID, f.json()["id"], max_steps=3, max_staleness=1)
    body["resources"] = {"devices": 2, "rollout_devices": 1}
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    done = wait_status(api, r.json()["id"], DONE, 300, worker)
    assert done["status"] == "succeeded", (done, worker.logs())
    assert done["resources"] == {"devices": 2, "nodes": 1, "rollout_devices": 1}
    ex = done["execution"]
    # one training process (not torchrun's two ranks), the sampler on its share of the worker's cores
    assert ex["world_size"] == 1 and ex["sampler"].startswith("its own process"), ex
    assert ex["sampler"].endswith(", a device of its own"), ex  # the worker passed the split on
    metrics = [e["data"] for e in all_events(api, done["id"]) if e["type"] == "metrics"]
    assert [m["step"] for m in metrics] == [1, 2, 3]
