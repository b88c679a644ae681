"""The scheduler (api.jobs.scheduling): its order on hand-made fleets, and through the API and the worker API on a
fresh SQLite schema: claim-next, fair share from usage records, the running limit and the monthly budget with their
reasons, priorities within the project's allowance, and preemption by the reaper."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from api.billing import service as billing
from api.billing.schemas import BillingUpdate
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import UsageRecord, now
from api.jobs import scheduling
from api.jobs.scheduling import Candidate, Fleet, decayed
from api.reaper import reap
from api.tenants import service as tenants
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

WORKER = {"Authorization": "Bearer t0k"}
JOBS = "/v1/fine_tuning/jobs"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "preemption_grace_seconds": 0, "max_devices_per_node": 2}


def cand(job_id: str, project: str, priority: int = 0, created: int = 0, **kw: Any) -> Candidate:
    return Candidate(job_id, project, priority, created, kw.get("devices", 1), 1, True, kw.get("not_before"))


def test_the_order_is_priority_then_share_then_age() -> None:
    fleet = Fleet(
        [cand("a1", "A", created=1), cand("a2", "A", created=2), cand("b1", "B", created=3), cand("c1", "C", 5, 9)],
        share={"A": 100.0, "B": 10.0, "C": 1000.0},
    )
    assert [c.id for c in fleet.order(t=10)] == ["c1", "b1", "a1", "a2"]
    fleet.share["B"] = 100.0  # equal shares: the oldest first
    assert [c.id for c in fleet.order(t=10)] == ["c1", "a1", "a2", "b1"]


def test_a_project_at_its_limit_and_a_job_in_backoff_are_passed_over() -> None:
    fleet = Fleet(
        [cand("a1", "A"), cand("b1", "B", created=5), cand("b2", "B", created=6, not_before=20)],
        running={"A": 2},
        limits={"A": 2, "B": None},
    )
    assert fleet.at_limit("A") == 2 and fleet.at_limit("B") is None
    assert [c.id for c in fleet.order(t=10)] == ["b1"]
    assert [c.id for c in fleet.order(t=20)] == ["b1", "b2"]


def test_usage_decays_by_half_each_half_life() -> None:
    assert decayed(100.0, 1000, 1000, 60) == 100.0
    assert decayed(100.0, 1000, 1060, 60) == pytest.approx(50.0)
    assert decayed(100.0, 1000, 1180, 60) == pytest.approx(12.5)


class Fleetside:
    """Projects with keys, jobs created through the public API, and a worker's claim-next."""

    def __init__(self, client: TestClient, settings: ApiSettings) -> None:
        self.c, self.settings = client, settings
        self.engine = create_engine(settings.db_url)
        self.keys: dict[str, dict[str, str]] = {}
        self.projects: dict[str, str] = {}
        self.claims = 0

    def project(self, name: str, **share: Any) -> None:
        with Session(self.engine) as s:
            pid = tenants.create_project(s, name).id
            _, key = tenants.create_key(s, pid, "test")
            if share:
                tenants.set_share(s, pid, **share)
        self.projects[name], self.keys[name] = pid, {"Authorization": f"Bearer {key}"}

    def submit(self, name: str, **extra: Any) -> dict[str, Any]:
        headers = self.keys[name]
        f = self.c.post(
            "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
        )
        r = self.c.post(JOBS, json=job_body(TINY_ID, f.json()["id"]) | extra, headers=headers)
        assert r.status_code == 201, r.text
        return r.json()

    def claim_next(self, **offer: Any) -> dict[str, Any] | None:
        self.claims += 1
        body = {"worker_id": f"w{self.claims}", "claim_id": f"claim-{self.claims:04d}", **offer}
        r = self.c.post("/internal/jobs/claim-next", json=body, headers=WORKER)
        assert r.status_code == 200, r.text
        claim: dict[str, Any] | None = r.json()["claim"]
        return claim

    def finish(self, claim: dict[str, Any], status: str = "succeeded", device_seconds: float = 0.0) -> Any:
        job_id = claim["job_id"]
        if status == "succeeded":
            ck = {"epoch": claim["epoch"], "step_number": 1, "object_key": "a.tar", "state_key": "s.tar", "metrics": {}}
            self.c.post(f"/internal/jobs/{job_id}/checkpoints", json=ck, headers=WORKER)
        if device_seconds:
            self.use(job_id, device_seconds)
        return self.c.post(
            f"/internal/jobs/{job_id}/finish", json={"epoch": claim["epoch"], "status": status}, headers=WORKER
        )

    def use(self, job_id: str, device_seconds: float) -> None:
        """What the job's attempt used (usage metering writes these from its worker's fenced calls)."""
        with Session(self.engine) as s:
            project = s.execute(text("select project_id from jobs where id = :id"), {"id": job_id}).scalar_one()
            t = now()
            s.query(UsageRecord).filter_by(subject_id=job_id).delete()
            s.add(
                UsageRecord(
                    id=f"usage-{job_id}", project_id=project, kind="job", subject_id=job_id, job_id=job_id,
                    attempt=1, day="2026-11-28", devices=1, started_at=t, last_seen_at=t,
                    device_seconds=device_seconds, steps=0, last_step=0, sampled_tokens=0, trained_tokens=0,
                    grader_calls=0, grader_seconds=0.0, eval_tokens=0, inference_tokens=0,
                )
            )  # fmt: skip
            s.commit()

    def job(self, name: str, job_id: str) -> dict[str, Any]:
        r = self.c.get(f"{JOBS}/{job_id}", headers=self.keys[name])
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture
def fleet(client: TestClient, settings: ApiSettings) -> Fleetside:
    return Fleetside(client, settings)


def test_the_next_job_goes_to_the_project_with_the_least_recent_device_time(fleet: Fleetside) -> None:
    fleet.project("a")
    fleet.project("b")
    a_jobs = [fleet.submit("a")["id"] for _ in range(3)]
    first = fleet.claim_next()
    assert first is not None and first["job_id"] in a_jobs  # created in the same second: any of them
    with fleet.engine.begin() as conn:  # created a moment earlier (ages are whole seconds)
        conn.execute(text("update jobs set created_at = created_at - 5"))
    b_job = fleet.submit("b")["id"]
    assert fleet.job("b", b_job)["waiting"] == {"reason": "waiting: 2 jobs ahead", "position": 2}
    assert fleet.finish(first, device_seconds=30.0).status_code == 200
    assert fleet.job("b", b_job)["waiting"]["position"] == 0  # A used the fleet; B has not
    nxt = fleet.claim_next()
    assert nxt is not None and nxt["job_id"] == b_job
    assert fleet.job("b", b_job)["waiting"] is None


def test_the_weights_set_the_share(fleet: Fleetside) -> None:
    """Weight 3 against 1 (A's jobs 10 device-seconds, B's 11, so no two shares tie): A runs three for each of B's."""
    fleet.project("a", weight=3.0)
    fleet.project("b")
    a_jobs = {fleet.submit("a")["id"] for _ in range(6)}
    with fleet.engine.begin() as conn:  # A's are older (ages are whole seconds)
        conn.execute(text("update jobs set created_at = created_at - 5"))
    for _ in range(2):
        fleet.submit("b")
    order = ""
    while (claim := fleet.claim_next()) is not None:
        mine = claim["job_id"] in a_jobs
        order += "a" if mine else "b"
        fleet.finish(claim, device_seconds=10.0 if mine else 11.0)
    assert order == "abaaabaa"


def test_a_project_at_its_running_limit_waits_with_the_reason(fleet: Fleetside) -> None:
    fleet.project("a", max_running_jobs=1)
    jobs = {fleet.submit("a")["id"], fleet.submit("a")["id"]}
    first = fleet.claim_next()
    assert first is not None
    (two,) = jobs - {first["job_id"]}
    assert fleet.job("a", two)["waiting"]["reason"] == "waiting: project at its limit of 1 running job"
    assert fleet.claim_next() is None  # a second worker finds nothing it may take
    fleet.finish(first)
    nxt = fleet.claim_next()
    assert nxt is not None and nxt["job_id"] == two


def test_a_worker_is_offered_only_the_jobs_that_fit_it(fleet: Fleetside) -> None:
    fleet.project("a")
    fleet.submit("a", resources={"devices": 2})
    assert fleet.claim_next(devices=1) is None
    assert fleet.claim_next(devices=2) is not None


def test_a_retried_claim_next_gets_the_same_lease(fleet: Fleetside, client: TestClient) -> None:
    fleet.project("a")
    fleet.submit("a")
    fleet.submit("a")
    body = {"worker_id": "w", "claim_id": "claim-same"}
    first = client.post("/internal/jobs/claim-next", json=body, headers=WORKER).json()["claim"]
    again = client.post("/internal/jobs/claim-next", json=body, headers=WORKER).json()["claim"]
    assert (again["job_id"], again["epoch"]) == (first["job_id"], first["epoch"])


def test_a_priority_above_the_projects_allowance_is_refused(fleet: Fleetside) -> None:
    fleet.project("a")
    f = fleet.c.post(
        "/v1/files",
        data={"purpose": "fine-tune"},
        files={"file": ("d.jsonl", jsonl(ARITH_ROWS))},
        headers=fleet.keys["a"],
    )
    r = fleet.c.post(JOBS, json=job_body(TINY_ID, f.json()["id"]) | {"priority": 5}, headers=fleet.keys["a"])
    assert r.status_code == 422 and r.json()["error"]["param"] == "priority", r.text
    assert "allowance of 0" in r.json()["error"]["message"]
    low = fleet.submit("a", priority=-5)
    assert low["priority"] == -5 and low["preemptible"] is True


def test_a_higher_priority_job_goes_first_and_preempts_a_preemptible_one(
    fleet: Fleetside, client: TestClient, settings: ApiSettings
) -> None:
    fleet.project("a", max_priority=5)
    low = fleet.submit("a")["id"]
    keep = fleet.submit("a", preemptible=False)["id"]
    running = [fleet.claim_next(), fleet.claim_next()]
    assert {c["job_id"] for c in running if c} == {low, keep}
    high = fleet.submit("a", priority=5)["id"]

    class Rings:
        def __getattr__(self, name: str) -> Any:
            return lambda *args: None

    with Session(create_engine(settings.db_url)) as s:
        assert reap(s, Rings(), settings)["preemptions_asked"] == 1  # type: ignore[arg-type]
    by_id = {c["job_id"]: c for c in running if c}
    beat = client.post(f"/internal/jobs/{low}/heartbeat", json={"epoch": by_id[low]["epoch"]}, headers=WORKER).json()
    assert beat["stop"] == "preempt"
    other = client.post(f"/internal/jobs/{keep}/heartbeat", json={"epoch": by_id[keep]["epoch"]}, headers=WORKER)
    assert other.json()["stop"] is None  # not preemptible
    with Session(create_engine(settings.db_url)) as s:
        assert reap(s, Rings(), settings)["preemptions_asked"] == 0  # asked once, not again
    # its worker checkpoints at the step boundary and hands the job back
    ck = {"epoch": by_id[low]["epoch"], "step_number": 1, "object_key": "a.tar", "state_key": "s.tar", "metrics": {}}
    client.post(f"/internal/jobs/{low}/checkpoints", json=ck, headers=WORKER)
    done = client.post(
        f"/internal/jobs/{low}/finish", json={"epoch": by_id[low]["epoch"], "status": "preempted"}, headers=WORKER
    )
    assert done.json()["status"] == "queued"
    nxt = fleet.claim_next()
    assert nxt is not None and nxt["job_id"] == high
    messages = {
        j: [e["message"] for e in client.get(f"{JOBS}/{j}/events?limit=50", headers=fleet.keys["a"]).json()["data"]]
        for j in (low, high)
    }
    assert any(m.startswith(f"Preempted by {high} (priority 5 > 0)") for m in messages[low]), messages[low]
    assert any(m.startswith(f"Preempted for {high}: back in the queue") for m in messages[low])
    assert any(m.startswith(f"No worker free: preempting {low}") for m in messages[high]), messages[high]
    fleet.finish(nxt)
    again = fleet.claim_next()
    assert again is not None and again["job_id"] == low and again["resume"]["step"] == 1
    assert again["epoch"] == 2
    events = [e["message"] for e in client.get(f"{JOBS}/{low}/events?limit=50", headers=fleet.keys["a"]).json()["data"]]
    assert any(m.startswith("Resumed from step 1 after it was preempted") for m in events), events
    attempts = fleet.engine.connect().execute(text("select attempts from jobs where id = :id"), {"id": low}).scalar()
    assert attempts == 1  # the preemption did not use up an attempt


def test_the_reaper_rings_one_doorbell_for_the_unclaimed_queue(fleet: Fleetside, settings: ApiSettings) -> None:
    fleet.project("a")
    jobs = [fleet.submit("a")["id"] for _ in range(3)]
    with Session(fleet.engine) as s:
        s.execute(text("update jobs set enqueued_at = 1"))
        s.commit()
    rings: list[str] = []

    class Rings:
        def ring(self, job_id: str) -> None:
            rings.append(job_id)

        def __getattr__(self, name: str) -> Any:
            return lambda *args: None

    bell: Doorbell = Rings()  # type: ignore[assignment]
    with Session(fleet.engine) as s:
        counts = reap(s, bell, settings)
    assert counts["requeued_queued"] == 3 and len(rings) == 1
    said = {
        j: [e["message"] for e in fleet.c.get(f"{JOBS}/{j}/events", headers=fleet.keys["a"]).json()["data"]]
        for j in jobs
    }
    told = [j for j in jobs if "Not claimed yet; ringing the queue again (its message may have been lost)" in said[j]]
    assert told == rings  # the job next in line says so; the others wait their turn silently


def test_a_job_asked_to_make_way_that_lost_its_worker_does_not_hold_the_preemption(
    fleet: Fleetside, settings: ApiSettings
) -> None:
    fleet.project("a", max_priority=5)
    lows = [fleet.submit("a")["id"] for _ in range(2)]
    assert fleet.claim_next() is not None and fleet.claim_next() is not None
    fleet.submit("a", priority=5)

    class Rings:
        def __getattr__(self, name: str) -> Any:
            return lambda *args: None

    with Session(fleet.engine) as s:
        assert reap(s, Rings(), settings)["preemptions_asked"] == 1  # type: ignore[arg-type]
    with fleet.engine.begin() as conn:  # the one asked loses its worker before it checkpoints
        conn.execute(text("update jobs set lease_expires_at = 1 where preempted_by is not null"))
    with Session(fleet.engine) as s:
        assert reap(s, Rings(), settings)["preemptions_asked"] == 1  # type: ignore[arg-type]  # the other one
    asked = fleet.engine.connect().execute(text("select count(*) from jobs where preempted_by is not null")).scalar()
    assert asked == 2 and len(lows) == 2


def test_polls_share_a_snapshot_for_a_moment_and_this_process_s_claims_drop_it(
    fleet: Fleetside, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(scheduling, "monotonic", lambda: clock[0])
    fleet.project("a")
    fleet.project("b")
    a_jobs = [fleet.submit("a")["id"] for _ in range(2)]
    with fleet.engine.begin() as conn:  # A's a moment earlier (ages are whole seconds)
        conn.execute(text("update jobs set created_at = created_at - 5"))
    b_job = fleet.submit("b")["id"]  # not in the snapshot A's creation read: read again
    assert fleet.job("b", b_job)["waiting"]["position"] == 2
    with fleet.engine.begin() as conn:  # another API process cancels one of A's
        conn.execute(text("update jobs set status = 'cancelled' where id = :id"), {"id": a_jobs[0]})
    assert fleet.job("b", b_job)["waiting"]["position"] == 2  # this process's snapshot, for its age
    clock[0] += scheduling.SNAPSHOT_MAX_AGE
    assert fleet.job("b", b_job)["waiting"]["position"] == 1
    claim = fleet.claim_next()  # this process claims: its snapshot is dropped at once
    assert claim is not None and claim["job_id"] == a_jobs[1]
    assert fleet.job("b", b_job)["waiting"] == {"reason": "waiting: next to start when a worker is free", "position": 0}


def test_a_project_over_its_monthly_budget_waits_with_the_reason_until_it_is_raised(
    fleet: Fleetside, settings: ApiSettings
) -> None:
    """No prices: the budget is in device-hours. Over it, the project's queued job waits saying which budget and by
    how much, no worker may take it, and a new job is refused (402); raised, the job goes."""
    fleet.project("a")
    jobs = {fleet.submit("a")["id"], fleet.submit("a")["id"]}
    first = fleet.claim_next()
    assert first is not None
    fleet.finish(first, device_seconds=7200.0)  # two device-hours this month
    pid = fleet.projects["a"]
    with Session(fleet.engine) as s:
        billing.update(s, settings, None, pid, BillingUpdate(monthly_budget=1.5), actor="test")
    (two,) = jobs - {first["job_id"]}
    month = time.strftime("%Y-%m", time.gmtime())
    assert fleet.job("a", two)["waiting"] == {
        "reason": f"waiting: project {pid} has spent 2 device-hours of its monthly budget of 1.5 device-hours for "
        f"{month} (over by 0.5 device-hours)",
        "position": None,
    }
    assert fleet.claim_next() is None
    f = fleet.c.post(
        "/v1/files",
        data={"purpose": "fine-tune"},
        files={"file": ("d.jsonl", jsonl(ARITH_ROWS))},
        headers=fleet.keys["a"],
    )
    refused = fleet.c.post(JOBS, json=job_body(TINY_ID, f.json()["id"]), headers=fleet.keys["a"])
    assert refused.status_code == 402 and refused.json()["error"]["param"] == "monthly_budget", refused.text
    with Session(fleet.engine) as s:
        billing.update(s, settings, None, pid, BillingUpdate(monthly_budget=3.0), actor="test")
    nxt = fleet.claim_next()
    assert nxt is not None and nxt["job_id"] == two
