"""One fleet shared by many projects, on real services: the API, Celery worker processes, Postgres, Redis and moto's
S3, on the tiny model. The scheduler (api.jobs.scheduling) decides what each worker runs: fair share across projects
by their weights, a project's running limit (its jobs wait, saying why), priorities that preempt a preemptible job,
which resumes exactly where it stopped."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from sqlalchemy import create_engine, text

from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.flow import all_events
from tests.integration.stack import Stack, production_env, running_api
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DONE = {"succeeded", "failed", "cancelled"}


@dataclass
class Fleet:
    stack: Stack
    pg_url: str
    projects: dict[str, str]
    clients: dict[str, httpx.Client]

    def submit(self, team: str, **extra: Any) -> str:
        api = self.clients[team]
        f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
        assert f.status_code == 201, f.text
        hp = extra.pop("hp", {})
        r = api.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, f.json()["id"], **hp) | extra)
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def job(self, team: str, job_id: str) -> dict[str, Any]:
        r = self.clients[team].get(f"/v1/fine_tuning/jobs/{job_id}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    def wait(self, team: str, job_id: str, statuses: set[str], timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (job := self.job(team, job_id))["status"] not in statuses:
            assert time.monotonic() < deadline, f"{job_id} stayed {job['status']}\n{self.stack.logs()}"
            time.sleep(0.3)
        return job

    def sql(self, query: str, **params: Any) -> list[Any]:
        with create_engine(self.pg_url).connect() as conn:
            return list(conn.execute(text(query), params))

    def start_order(self) -> list[str]:
        """Jobs in the order their first attempt started (the claim's event)."""
        rows = self.sql(
            "select job_id, min(seq) from job_events where message like 'Fine-tuning job started%' "
            "group by job_id order by 2"
        )
        return [r[0] for r in rows]

    def adapter(self, team: str, job_id: str) -> dict[str, torch.Tensor]:
        from safetensors.torch import load

        api = self.clients[team]
        ckpt = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"][0]
        resp = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints/{ckpt['id']}/content")
        if resp.status_code == 302:
            resp = httpx.get(resp.headers["location"], timeout=30)
        with tarfile.open(fileobj=io.BytesIO(resp.content)) as tar:
            member = tar.extractfile("adapter_model.safetensors")
            assert member is not None
            return load(member.read())


@pytest.fixture(scope="module")
def fleet(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    """Its own database (projects with keys turn authentication on) and broker queue; workers per test."""
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, tmp_path_factory.mktemp("state"))
        env |= {"PREEMPTION_GRACE_SECONDS": "2"}
        with running_api(env, logs_dir) as stack:
            projects, clients = {}, {}
            for team in ("a", "b"):
                projects[team] = stack.admin("projects", "create", f"team-{team}")
                key = stack.admin("keys", "create", "--project", projects[team], "--name", team)
                clients[team] = httpx.Client(base_url=stack.url, timeout=30, headers={"Authorization": f"Bearer {key}"})
            try:
                yield Fleet(stack, pg_url, projects, clients)
            finally:
                for c in clients.values():
                    c.close()


def test_one_worker_serves_the_projects_by_fair_share_and_weight(fleet: Fleet) -> None:
    """A (weight 3) queues six jobs, B (weight 1) three a moment later, then one worker starts: B's first job is the
    next to start after A's first, and every start goes to the project with the least metered device time for its
    weight (equal weights would pass A over sooner; first come, first served would run all of A's first)."""
    fleet.stack.admin("projects", "set", fleet.projects["a"], "--weight", "3")
    hp = {"max_steps": 8, "checkpoint_interval": 100}  # a second or two each (metered to the fraction of a second)
    a_jobs = [fleet.submit("a", hp=hp) for _ in range(6)]
    time.sleep(1.1)  # ages are whole seconds
    b_jobs = [fleet.submit("b", hp=hp) for _ in range(3)]
    waiting = fleet.job("b", b_jobs[0])["waiting"]
    # no usage yet, so A's six go first (older); B's own, created in the same second, may come before it too
    assert 6 <= waiting["position"] <= 8 and waiting["reason"] == f"waiting: {waiting['position']} jobs ahead"
    fleet.stack.start_worker()
    try:
        for job_id in b_jobs:
            assert fleet.wait("b", job_id, DONE)["status"] == "succeeded"
        for job_id in a_jobs:
            assert fleet.wait("a", job_id, DONE)["status"] == "succeeded"
    finally:
        fleet.stack.stop_worker()
    starts = [j for j in fleet.start_order() if j in a_jobs + b_jobs]
    order = ["a" if j in a_jobs else "b" for j in starts]
    assert order[:2] == ["a", "b"], order
    # each start went to the project with the least device time for its weight, as metered: one worker runs the jobs
    # one after another, so the jobs started before are finished and their records final (a day's half-life decays
    # less than 0.1 % in this test). The first job pays the worker's warm-up, so the counts vary from run to run
    used = dict(fleet.sql("select job_id, device_seconds from usage_records where job_id = any(:ids)", ids=starts))
    weight = {"a": 3.0, "b": 1.0}
    for k, team in enumerate(order):
        before = list(zip(starts[:k], order[:k], strict=True))
        share = {t: sum(used[j] for j, o in before if o == t) / weight[t] for t in "ab"}
        other = "b" if team == "a" else "a"
        if other in order[k:]:  # the other project still had a job waiting
            assert share[team] <= share[other] * 1.001 + 1e-6, (k, order, share, used)
    assert order.count("a") == 6 and all(used[j] > 0 for j in starts), used
    # another project sees none of A's jobs, nor their place in line
    assert fleet.clients["b"].get(f"/v1/fine_tuning/jobs/{a_jobs[0]}").status_code == 404


def test_two_workers_never_take_the_same_job_and_a_project_waits_at_its_limit(fleet: Fleet) -> None:
    fleet.stack.admin("projects", "set", fleet.projects["a"], "--weight", "1", "--max-running-jobs", "1")
    a_jobs = [fleet.submit("a", hp={"max_steps": 4}) for _ in range(2)]
    b_jobs = [fleet.submit("b", hp={"max_steps": 2}) for _ in range(2)]
    fleet.stack.start_worker()
    second = fleet.stack.extra_worker(2)
    reasons: set[str] = set()
    try:
        deadline = time.monotonic() + 400
        while True:
            jobs = {j: fleet.job("a", j) for j in a_jobs} | {j: fleet.job("b", j) for j in b_jobs}
            running_a = [j for j in a_jobs if jobs[j]["status"] == "running"]
            assert len(running_a) <= 1, jobs  # A's limit holds, with a worker free
            reasons |= {j["waiting"]["reason"] for j in jobs.values() if j["waiting"]}
            if all(j["status"] in DONE for j in jobs.values()):
                break
            assert time.monotonic() < deadline, fleet.stack.logs()
            time.sleep(0.3)
    finally:
        second.stop()
        fleet.stack.stop_worker()
    assert all(j["status"] == "succeeded" for j in jobs.values()), jobs
    assert "waiting: project at its limit of 1 running job" in reasons, reasons
    for job_id in a_jobs + b_jobs:  # each claimed once, by one worker
        (epoch,) = fleet.sql("select lease_epoch from jobs where id = :id", id=job_id)[0]
        starts = fleet.sql(
            "select count(*) from job_events where job_id = :id and message like 'Fine-tuning job started%'", id=job_id
        )[0][0]
        assert (epoch, starts) == (1, 1), job_id
    fleet.stack.admin("projects", "set", fleet.projects["a"], "--no-running-limit")


def test_a_higher_priority_job_preempts_a_preemptible_one_which_resumes_exactly(fleet: Fleet) -> None:
    """One worker: a long low-priority job runs; a priority-5 job arrives and waits past the grace period, so the
    running one checkpoints at its next step boundary and goes back to the queue; the priority job runs, then the
    preempted one resumes from its checkpoint and ends with the adapter of the same job run without interruption."""
    fleet.stack.admin("projects", "set", fleet.projects["a"], "--max-priority", "5")
    hp = {"max_steps": 150, "checkpoint_interval": 1000}  # the tiny model's steps take ~0.1 s: long enough to preempt
    long = fleet.submit("a", hp=hp)
    fleet.stack.start_worker()
    try:
        deadline = time.monotonic() + 240
        while fleet.job("a", long)["steps_done"] < 2:
            assert time.monotonic() < deadline, fleet.stack.logs()
            time.sleep(0.2)
        urgent = fleet.submit("a", hp={"max_steps": 2}, priority=5)
        done_urgent = fleet.wait("a", urgent, DONE)
        done_long = fleet.wait("a", long, DONE)
        straight = fleet.submit("a", hp=hp)
        done_straight = fleet.wait("a", straight, DONE)
    finally:
        fleet.stack.stop_worker()
    assert [done_urgent["status"], done_long["status"], done_straight["status"]] == ["succeeded"] * 3
    assert done_urgent["priority"] == 5 and done_long["preemptible"] is True
    events = [e["message"] for e in all_events(fleet.clients["a"], long)]
    assert any(m.startswith(f"Preempted by {urgent} (priority 5 > 0)") for m in events), events
    handed = next(m for m in events if m.startswith(f"Preempted for {urgent}: back in the queue at step "))
    step = int(handed.split("at step ")[1].split("/")[0])
    assert 2 <= step < 150, handed
    assert any(m.startswith(f"Resumed from step {step} after it was preempted") for m in events), events
    said = [
        e["message"] for e in fleet.clients["a"].get(f"/v1/fine_tuning/jobs/{urgent}/events?limit=100").json()["data"]
    ]
    assert any(m.startswith(f"No worker free: preempting {long}") for m in said), said
    # the urgent job started while the long one waited: between its hand-back and its resumption
    order = fleet.start_order()
    assert order.index(long) < order.index(urgent)
    steps = [e["data"]["step"] for e in all_events(fleet.clients["a"], long) if e["type"] == "metrics"]
    assert steps == list(range(1, 151))  # no gap, no duplicate
    a, b = fleet.adapter("a", long), fleet.adapter("a", straight)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "the resumed adapter differs"
