"""Usage metering (api.usage): what each attempt of a job used, counted once across retried posts, resumes and nodes;
``GET /v1/usage`` with its filters and groups, a job's ``usage`` field, the operator's view, and another project
seeing none of it. The API on SQLite with the worker's internal endpoints played by the test."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, select, text
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.db.models import UsageRecord
from api.usage.metering import device_kind, step_usage
from grpo_core.schemas.metrics import Execution, StepMetrics
from tests.helpers import ARITH_ROWS, job_body, jsonl, metrics_event, step_metrics
from tests.tiny_model import TINY_ID
from tests.training_objects import make_training_objects
from tests.unit.test_tenants import bearer, new_key

WORKER = {"Authorization": "Bearer t0k"}
ADMIN = {"Authorization": "Bearer adm1n"}
GRADER = [{"name": "g", "train_reward_mean": 0.5, "error_rate": 0.0}]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "admin_token": "adm1n"}


class Job:
    """One job of a project, seen from its key and from a worker's internal API."""

    def __init__(self, client: TestClient, settings: ApiSettings, headers: dict[str, str]) -> None:
        self.c, self.settings, self.headers = client, settings, headers
        fid = client.post(
            "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
        ).json()["id"]
        self.id = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid), headers=headers).json()["id"]
        self.url = f"/internal/jobs/{self.id}"

    def claim(self, claim_id: str) -> int:
        r = self.c.post(f"{self.url}/claim", json={"worker_id": "w", "claim_id": claim_id}, headers=WORKER)
        assert r.status_code == 200, r.text
        return int(r.json()["epoch"])

    def write(self, kind: str, epoch: int, **body: Any) -> Any:
        return self.c.post(f"{self.url}/{kind}", json={"epoch": epoch, **body}, headers=WORKER)

    def steps(self, epoch: int, *steps: int, tokens: int = 80) -> None:
        events = [metrics_event(s, tokens=tokens, scores={"train_reward_mean": 0.5, "graders": GRADER}) for s in steps]
        assert self.write("events", epoch, events=events).status_code == 200

    def sql(self, statement: str) -> None:
        with create_engine(self.settings.db_url).begin() as conn:
            conn.execute(text(statement), {"id": self.id})

    def usage(self, **params: Any) -> Any:
        r = self.c.get("/v1/usage", params={"job_id": self.id} | params, headers=self.headers)
        assert r.status_code == 200, r.text
        return r.json()

    def rows(self) -> list[UsageRecord]:
        with Session(create_engine(self.settings.db_url)) as s:
            found = s.scalars(select(UsageRecord).where(UsageRecord.job_id == self.id).order_by(UsageRecord.attempt))
            return list(found)


@pytest.fixture
def key(settings: ApiSettings) -> str:
    return new_key(settings, name="A")[2]


@pytest.fixture
def project(key: str) -> dict[str, str]:
    return bearer(key)


def test_a_step_counts_tokens_graders_and_scoring_time() -> None:
    plain = StepMetrics.model_validate(step_metrics(1, tokens=80, scores={"train_reward_mean": 1, "graders": GRADER}))
    u = step_usage(plain, {"group_size": 4})
    assert (u.sampled_tokens, u.trained_tokens, u.grader_calls, u.grader_seconds) == (80, 80, 8, 0.1)
    # dynamic sampling drew 4 groups and trained on 2; GFPO drew 8 a prompt and kept 4; two graders and a multi's part
    graders = [
        *GRADER,
        {"name": "h", "train_reward_mean": 1, "error_rate": 0.1},
        {"name": "h.x", "train_reward_mean": 1},
    ]
    sampling = {"sampling_rounds": 2, "groups_sampled": 4, "groups_dropped": 2, "groups_trained": 2}
    dropped = StepMetrics.model_validate(
        step_metrics(1, tokens=80, sampling=sampling, scores={"train_reward_mean": 1, "graders": graders})
    )
    u = step_usage(dropped, {"group_size": 4, "gfpo_sample_size": 8})
    assert (u.sampled_tokens, u.trained_tokens, u.grader_calls) == (320, 80, 4 * 8 * 2)


def test_a_device_kind_names_the_gpu_or_the_cpu() -> None:
    base = {"precision": "bf16", "precision_reason": "r", "micro_batch_size": 1}
    base |= {"gradient_checkpointing": False, "rollout_engine": "merged"}
    gpu = Execution.model_validate(base | {"device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3"})
    assert device_kind(gpu) == "NVIDIA H100 80GB HBM3"
    assert (
        device_kind(Execution.model_validate(base | {"device": "cpu", "device_name": "AMD EPYC"})) == "cpu (AMD EPYC)"
    )


def test_retried_posts_count_once_and_a_resumed_attempt_counts_its_own_steps(
    client: TestClient, settings: ApiSettings, project: dict[str, str]
) -> None:
    job = Job(client, settings, project)
    assert job.claim("claim-0001") == 1
    job.steps(1, 1, 2)
    job.steps(1, 2)  # a retried post of step 2
    job.steps(1, 1)  # and an older one, late
    job.write("checkpoints", 1, step_number=1, object_key="a.tar", state_key="a.ckpt.tar", metrics={})
    job.sql("update jobs set lease_expires_at = 0 where id = :id")  # the worker is killed after step 2
    assert job.claim("claim-0002") == 2
    assert job.write("heartbeat", 1).status_code == 409  # the dead attempt writes nothing, and meters nothing
    job.steps(2, 2, 3, tokens=100)  # resumed from the checkpoint at step 1: step 2 again, then 3
    job.steps(2, 3, tokens=100)
    first, second = job.rows()
    assert (first.attempt, first.steps, first.last_step, first.trained_tokens) == (1, 2, 2, 160)
    assert (second.attempt, second.steps, second.last_step, second.trained_tokens) == (2, 2, 3, 200)
    assert first.grader_calls == second.grader_calls == 2 * 2 * 4  # 2 steps × 2 groups × 4 samples × 1 grader
    assert abs(first.grader_seconds - 0.2) < 1e-9
    totals = job.usage()["totals"]
    assert totals["steps"] == 4 and totals["trained_tokens"] == 360 and totals["sampled_tokens"] == 360
    assert totals["attempts"] == 2 and totals["grader_calls"] == 32
    got = client.get(f"/v1/fine_tuning/jobs/{job.id}", headers=project).json()["usage"]
    assert {k: got[k] for k in ("steps", "trained_tokens", "attempts")} == {
        "steps": 4,
        "trained_tokens": 360,
        "attempts": 2,
    }
    listed = client.get("/v1/fine_tuning/jobs", headers=project).json()["data"]
    assert [j["usage"]["steps"] for j in listed] == [4]


def test_device_seconds_are_devices_times_the_span_to_the_last_fenced_contact(
    client: TestClient, settings: ApiSettings, project: dict[str, str]
) -> None:
    job = Job(client, settings, project)
    job.sql("""update jobs set resources = '{"devices": 2, "nodes": 3}' where id = :id""")
    epoch = job.claim("claim-0001")
    (row,) = job.rows()
    assert row.devices == 6 and row.device_seconds == 0 and row.started_at == row.last_seen_at
    job.sql(
        "update usage_records set started_at = started_at - 100, last_seen_at = last_seen_at - 100 where job_id = :id"
    )
    execution = {"device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3", "precision": "bf16"}
    execution |= {"precision_reason": "r", "micro_batch_size": 1, "gradient_checkpointing": False}
    posted = job.write("execution", epoch, execution=execution | {"rollout_engine": "vllm"})
    assert posted.status_code == 200, posted.text
    (row,) = job.rows()
    assert 600 <= row.device_seconds <= 6 * 102 and row.device_kind == "NVIDIA H100 80GB HBM3"
    assert row.device_seconds == 6 * (row.last_seen_at - row.started_at)
    job.sql("update usage_records set last_seen_at = last_seen_at + 1000 where job_id = :id")  # a clock ahead
    assert job.write("heartbeat", epoch).status_code == 200  # never lowers last_seen_at
    (row,) = job.rows()
    assert row.device_seconds == 6 * (row.last_seen_at - row.started_at) >= 6 * 1000
    totals = job.usage()["totals"]
    assert totals["device_seconds"] == row.device_seconds
    assert totals["device_seconds_by_kind"] == {"NVIDIA H100 80GB HBM3": row.device_seconds}


def test_a_pooled_attempt_is_billed_its_steps_not_the_wall_clock_it_shares(
    client: TestClient, settings: ApiSettings, project: dict[str, str]
) -> None:
    """A job sharing its worker (execution.pool_tenants) is billed the seconds its steps' turns held the device
    (timing.full_iteration, validation included), not the span its tenants all share; before its execution
    arrives (loading) the clock counts as for any attempt."""
    job = Job(client, settings, project)
    epoch = job.claim("claim-0001")
    job.sql(
        "update usage_records set started_at = started_at - 100, last_seen_at = last_seen_at - 100 where job_id = :id"
    )
    execution = {"device": "cpu", "device_name": "AMD EPYC", "precision": "fp32", "precision_reason": "r"}
    execution |= {"micro_batch_size": 1, "gradient_checkpointing": False, "rollout_engine": "merged"}
    assert job.write("execution", epoch, execution=execution | {"pool_tenants": 3}).status_code == 200
    (row,) = job.rows()
    loading = row.device_seconds
    assert row.shared and 100 <= loading <= 102
    job.steps(epoch, 1, 2)  # each step's full_iteration is 1.0 s
    job.steps(epoch, 2)  # a retried post adds nothing
    job.sql("update usage_records set started_at = started_at - 5000 where job_id = :id")  # hours of shared clock
    assert job.write("heartbeat", epoch).status_code == 200
    (row,) = job.rows()
    assert row.device_seconds == pytest.approx(loading + 2.0)
    assert job.usage()["totals"]["device_seconds"] == pytest.approx(loading + 2.0)


def test_an_attempt_claimed_before_metering_is_metered_from_its_next_contact(
    client: TestClient, settings: ApiSettings, project: dict[str, str]
) -> None:
    job = Job(client, settings, project)
    epoch = job.claim("claim-0001")
    job.sql("delete from usage_records where job_id = :id")
    job.steps(epoch, 1)
    (row,) = job.rows()
    owner = client.get(f"/v1/fine_tuning/jobs/{job.id}", headers=project).json()["organization_id"]
    assert (row.attempt, row.steps, row.trained_tokens, row.project_id) == (1, 1, 80, owner)


def test_usage_by_day_and_by_job_with_filters(
    client: TestClient, settings: ApiSettings, project: dict[str, str]
) -> None:
    one, two = Job(client, settings, project), Job(client, settings, project)
    one.steps(one.claim("claim-0001"), 1, 2)
    two.steps(two.claim("claim-0002"), 1)
    two.sql("update usage_records set started_at = 86400 * 10 + 5, day = '1970-01-11' where job_id = :id")
    by_day = client.get("/v1/usage", headers=project).json()
    assert by_day["object"] == "list" and not by_day["has_more"]
    assert [b["steps"] for b in by_day["data"]] == [2, 1]  # newest day first
    old = by_day["data"][1]
    assert (old["day"], old["start_time"], old["end_time"]) == ("1970-01-11", 864_000, 950_400)
    assert by_day["totals"]["steps"] == 3 and by_day["totals"]["trained_tokens"] == 240
    by_job = client.get("/v1/usage", params={"group_by": "job"}, headers=project).json()["data"]
    assert {b["job_id"]: b["steps"] for b in by_job} == {one.id: 2, two.id: 1}
    window = {"start_time": 864_000, "end_time": 950_400}
    assert client.get("/v1/usage", params=window, headers=project).json()["totals"]["steps"] == 1
    assert client.get("/v1/usage", params={"kind": "eval"}, headers=project).json()["totals"]["steps"] == 0
    assert client.get("/v1/usage", params={"limit": 1}, headers=project).json()["has_more"]
    for params, status, param in (
        ({"start_time": 10, "end_time": 10}, 400, "end_time"),
        ({"group_by": "week"}, 422, "group_by"),
        ({"kind": "gpu"}, 422, "kind"),
        ({"start_time": -1}, 422, "start_time"),
        ({"job_id": "ftjob-000000000000000000000000"}, 404, "job_id"),
    ):
        r = client.get("/v1/usage", params=params, headers=project)
        assert r.status_code == status and r.json()["error"]["param"] == param, (params, r.text)


def test_another_project_sees_none_of_it_and_the_operator_sees_every_project(
    client: TestClient, settings: ApiSettings, project: dict[str, str]
) -> None:
    job = Job(client, settings, project)
    job.steps(job.claim("claim-0001"), 1)
    pid_b, _, key_b = new_key(settings, name="B")
    theirs = Job(client, settings, bearer(key_b))
    theirs.steps(theirs.claim("claim-0002"), 1, 2)
    seen_by_b = client.get("/v1/usage", params={"group_by": "job"}, headers=bearer(key_b)).json()
    assert [b["job_id"] for b in seen_by_b["data"]] == [theirs.id] and seen_by_b["totals"]["steps"] == 2
    r = client.get("/v1/usage", params={"job_id": job.id}, headers=bearer(key_b))
    assert r.status_code == 404 and r.json()["error"]["param"] == "job_id"
    assert client.get("/v1/admin/usage", headers=project).status_code == 401  # a project key is not the admin token
    fleet = client.get("/v1/admin/usage", headers=ADMIN).json()
    steps = {b["project_id"]: b["steps"] for b in fleet["data"]}
    assert steps[pid_b] == 2 and sum(steps.values()) == 3 == fleet["totals"]["steps"]
    by_day = client.get("/v1/admin/usage", params={"group_by": "day", "project_id": pid_b}, headers=ADMIN).json()
    assert [(b["project_id"], b["steps"]) for b in by_day["data"]] == [(pid_b, 2)] and by_day["data"][0]["day"]


def test_eval_runs_and_training_sessions_are_metered(
    client: TestClient, settings: ApiSettings, key: str, project: dict[str, str]
) -> None:
    from tests.unit.test_tenant_isolation import EVAL_RUN, PY_GRADER

    ev = client.post(
        "/v1/evals",
        json={"data_source_config": {"type": "custom", "item_schema": {}}, "testing_criteria": [PY_GRADER]},
        headers=project,
    ).json()
    run = client.post(f"/v1/evals/{ev['id']}/runs", json=EVAL_RUN, headers=project).json()
    url = f"/internal/evals/runs/{run['id']}"
    assert client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "evalclaim-1"}, headers=WORKER).is_success
    usage = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
    item = {
        "datasource_item_id": 0,
        "datasource_item": {"q": "1+1="},
        "status": "pass",
        "input": [{"role": "user", "content": "1+1="}],
        "samples": [{"output": [{"role": "assistant", "content": "2"}], "finish_reason": "stop", "usage": usage}],
        "results": [{"name": "has_digit", "sample": 0, "score": 1.0, "passed": True}],
    }
    for _ in range(2):  # a retried post of the same item counts once
        posted = client.post(f"{url}/items", json={"claim_id": "evalclaim-1", "items": [item]}, headers=WORKER)
        assert posted.status_code == 200, posted.text
    totals = client.get("/v1/usage", params={"kind": "eval"}, headers=project).json()["totals"]
    assert totals["eval_tokens"] == 12 and totals["attempts"] == 0
    sid = make_training_objects(client, key)["session_id"]
    with create_engine(settings.db_url).begin() as conn:
        conn.execute(text("update usage_records set started_at = started_at - 50 where subject_id = :s"), {"s": sid})
    beat = client.post(f"/internal/training/sessions/{sid}/heartbeat", json={"claim_id": "c-1"}, headers=WORKER)
    assert beat.status_code == 200, beat.text
    sessions = client.get("/v1/usage", params={"kind": "session", "group_by": "job"}, headers=project).json()
    (bucket,) = sessions["data"]
    assert bucket["job_id"] is None and 50 <= bucket["device_seconds"] <= 52
