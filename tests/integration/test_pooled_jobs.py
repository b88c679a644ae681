"""Jobs of one base model pooled on one worker process (worker.pool, grpo_core.pool), on the real stack: the API,
Postgres, Redis, moto's S3 and a Celery worker with POOL_TENANTS=4 that decodes its tenants' rollouts and computes
their updates together (POOL_SAMPLE_TOGETHER). Four jobs of two projects share the worker; one is cancelled and one
has a failing grader, and they end alone while the other two go on; the worker is killed mid-run and the survivors
resume and finish with every step once. The survivor that asks for exact reproduction (``pool_exact``) trains an
adapter bit-identical (fp32) to the same job trained alone in this process; the other, which worked together with
the others, one within the stated bound of it (tests/unit/test_pool_together.py)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from tests.helpers import ARITH_ROWS, PY_GRADER, job_body, jsonl
from tests.integration.adapters import adapter_of, trained_alone
from tests.integration.flow import all_events
from tests.integration.stack import Stack, production_env, running_api, wait_status
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DONE = {"succeeded", "failed", "cancelled"}
FAILING = {"type": "python", "name": "broken", "source": "def grade(sample, item):\n    return 1 / 0\n"}
STEPS = 12
ADAPTER_BOUND = 1e-4  # fp32, a job whose rollouts were decoded together against the job alone (test_pool_together)


@dataclass
class Pooled:
    stack: Stack
    keys: dict[str, str]

    def client(self, project: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.stack.url, timeout=30, headers={"Authorization": f"Bearer {self.keys[project]}"}
        )


@pytest.fixture(scope="module")
def pooled(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pooled]:
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, tmp_path_factory.mktemp("state"))
        env |= {"POOL_TENANTS": "4", "POOL_SAMPLE_TOGETHER": "true"}
        with running_api(env, logs_dir) as stack:
            yield Pooled(stack, {name: stack.project_key(name)[1] for name in ("team-a", "team-b")})


def submit(api: httpx.Client, seed: int, grader: dict[str, Any], **hp: Any) -> dict[str, Any]:
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    body = job_body(TINY_ID, f.json()["id"], grader=grader, precision="fp32", learning_rate=5e-3, **hp)
    body["seed"] = seed
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def steps_done(api: httpx.Client, job_id: str) -> int:
    return int(api.get(f"/v1/fine_tuning/jobs/{job_id}").json()["steps_done"])


def wait_for(check: Any, stack: Stack, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.2)


def test_four_jobs_of_two_projects_share_a_worker_and_each_trains_as_alone(
    pooled: Pooled, tiny_model_dir: Path, tmp_path: Path
) -> None:
    stack = pooled.stack
    with pooled.client("team-a") as a, pooled.client("team-b") as b:
        a1 = submit(a, 7, PY_GRADER, max_steps=STEPS, checkpoint_interval=1, pool_exact=True)
        a2 = submit(a, 8, PY_GRADER, max_steps=200, checkpoint_interval=1)  # cancelled
        b1 = submit(b, 9, FAILING, max_steps=STEPS)  # its grader fails every sample
        b2 = submit(b, 10, PY_GRADER, max_steps=STEPS, checkpoint_interval=1)
        stack.start_worker()
        # all four on the one worker process: the first job opened a pool, the others joined between its steps
        wait_for(lambda: all(steps_done(c, j["id"]) >= 1 for c, j in ((a, a1), (a, a2), (b, b2))), stack)
        scraped = httpx.get(f"{stack.url}/metrics", timeout=30).text  # the operator's view: jobs per worker process
        per_worker = [float(x.rsplit(" ", 1)[1]) for x in scraped.splitlines() if x.startswith("rft_worker_jobs{")]
        assert per_worker and max(per_worker) >= 3, scraped
        failed = wait_status(b, b1["id"], DONE, 240, stack)
        assert failed["status"] == "failed" and "broken" in failed["error"]["message"], failed
        assert a.post(f"/v1/fine_tuning/jobs/{a2['id']}/cancel").status_code == 200
        cancelled = wait_status(a, a2["id"], DONE, 240, stack)
        assert cancelled["status"] == "cancelled", cancelled
        assert steps_done(a, a1["id"]) < STEPS and steps_done(b, b2["id"]) < STEPS, "the survivors went on meanwhile"
        # the worker killed mid-run (parent and pool child): the leases expire, both jobs resume and finish
        wait_for(lambda: steps_done(a, a1["id"]) >= 3 and steps_done(b, b2["id"]) >= 3, stack)
        assert stack.worker is not None
        for pid in [stack.worker.popen.pid, *stack.training_pids()]:
            os.kill(pid, signal.SIGKILL)
        stack.worker = None
        stack.start_worker()
        finished = [wait_status(c, j["id"], DONE, 300, stack) for c, j in ((a, a1), (b, b2))]
        for job, client in zip(finished, (a, b), strict=True):
            assert job["status"] == "succeeded", job
            events = all_events(client, job["id"])
            assert [e["data"]["step"] for e in events if e["type"] == "metrics"] == list(range(1, STEPS + 1))
            assert job["execution"]["pool_tenants"] >= 1
            assert job["execution"]["pool_together"] is (job["id"] != a1["id"])  # a1 asked for exact: in turn
            messages = [e["message"] for e in events]
            assert any("shares this worker" in m or "Sharing this worker" in m for m in messages), messages
            assert not any("team-a" in m or "team-b" in m for m in messages)  # how many, never whose
        said = []
        for client, job in ((a, a1), (a, a2), (b, b1), (b, b2)):
            messages = [e["message"] for e in all_events(client, job["id"])]
            assert any("shares this worker" in m or "Sharing this worker" in m for m in messages), messages
            said += messages
        assert any("together with theirs" in m for m in said), said  # the jobs that joined a pool were told how
        # another project's jobs are not found
        assert a.get(f"/v1/fine_tuning/jobs/{b2['id']}").status_code == 404
        for client, job in ((a, a1), (b, b2)):
            got = adapter_of(client, job["id"], tmp_path / job["id"])
            alone = trained_alone(job, tiny_model_dir, tmp_path / f"alone-{job['id']}")
            assert got.keys() == alone.keys()
            for k in got:
                if job is a1:  # sampled alone, in turn: bit for bit
                    assert torch.equal(got[k], alone[k]), (job["id"], k)
                else:  # sampled together with the others: within rounding
                    assert float((got[k] - alone[k]).abs().max()) <= ADAPTER_BOUND, (job["id"], k)
