"""OpenAI-SDK drop-in: the official ``openai`` package, pointed at this service, does files, jobs, events,
checkpoints and graders, and what it returns parses as its own types.

One uvicorn process on the embedded defaults (SQLite, filesystem broker, local object store) with the tiny model
catalog; no worker: the few worker-side facts (metrics events, checkpoints, success) are written through the
internal worker API with the worker token, exactly as a worker would. Every public call goes through
``openai.OpenAI(base_url=<server>/v1)``; ``_strict`` re-validates each object against the SDK's pydantic model
(the SDK itself only ``construct``s, which accepts anything), so a wrong type or a missing field fails here.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from openai.types import FileDeleted, FileObject
from openai.types.fine_tuning import FineTuningJob, FineTuningJobEvent
from openai.types.fine_tuning.alpha import GraderRunResponse, GraderValidateResponse
from openai.types.fine_tuning.jobs import FineTuningJobCheckpoint

from grpo_core.schemas.config import DEFAULT_LEARNING_RATE
from tests.helpers import ARITH_ROWS, jsonl, metrics_event, migrate
from tests.integration.stack import Stack
from tests.tiny_model import TINY_ID

pytestmark = pytest.mark.integration

WORKER_TOKEN = secrets.token_hex(16)
GRADER = {
    "type": "string_check",
    "name": "exact",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "eq",
}
# Every reinforcement hyperparameter OpenAI's SDK knows, as an OpenAI RFT body would send them.
OPENAI_HP: dict[str, Any] = {
    "batch_size": "auto",
    "n_epochs": "auto",
    "learning_rate_multiplier": 2.0,
    "eval_interval": "auto",
    "eval_samples": "auto",
    "reasoning_effort": "medium",
    "compute_multiplier": "auto",
}
GRPO_HP: dict[str, Any] = {"group_size": 4, "batch_size": 2, "max_steps": 5, "max_completion_tokens": 8}


@pytest.fixture(scope="module")
def server(catalog_dir: Path, tmp_path_factory: pytest.TempPathFactory, logs_dir: Path) -> Iterator[Stack]:
    state = tmp_path_factory.mktemp("sdk_state")
    migrate(f"sqlite:///{state.resolve() / 'rft.db'}")
    env = {
        "STATE_DIR": str(state),
        "MODEL_CATALOG_DIR": str(catalog_dir),
        "WORKER_TOKEN": WORKER_TOKEN,
        "REAPER": "false",  # nothing here may move a job but the test itself
        "MAX_ACTIVE_JOBS_PER_PROJECT": "1000",
        "RATE_LIMIT_PER_MINUTE": "0",
    }
    stack = Stack(env, logs_dir)
    try:
        stack.start_api()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def client(server: Stack) -> Iterator[OpenAI]:
    # Open mode ignores the key, as any OpenAI-compatible local server does; the SDK insists on sending one.
    with OpenAI(base_url=f"{server.url}/v1", api_key="anything") as c:
        yield c


@pytest.fixture(scope="module")
def worker_api(server: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {WORKER_TOKEN}"}, timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def train_file(client: OpenAI) -> FileObject:
    return client.files.create(file=("arith.jsonl", jsonl(ARITH_ROWS)), purpose="fine-tune")


def _strict(model: type[Any], obj: Any) -> Any:
    """Validate the wire JSON against the SDK's model (the SDK's own parsing never rejects anything)."""
    return model.model_validate(obj.to_dict(mode="json"))


def _recent(ts: int) -> None:
    assert isinstance(ts, int) and abs(ts - time.time()) < 600, ts  # Unix seconds, not ms or ISO strings


def _create_job(client: OpenAI, file_id: str, **kw: Any) -> FineTuningJob:
    hp = kw.pop("hyperparameters", GRPO_HP)
    method = {"type": "reinforcement", "reinforcement": {"grader": GRADER, "hyperparameters": hp}}
    return client.fine_tuning.jobs.create(model=TINY_ID, training_file=file_id, method=method, **kw)  # type: ignore[arg-type]


def test_files_create_retrieve_content_list_delete(client: OpenAI) -> None:
    body = jsonl(ARITH_ROWS)
    created = [client.files.create(file=(f"f{i}.jsonl", body), purpose="fine-tune") for i in range(5)]
    f = created[0]
    assert isinstance(f, FileObject) and _strict(FileObject, f)
    assert (f.object, f.purpose, f.status, f.bytes, f.filename) == (
        "file",
        "fine-tune",
        "processed",
        len(body),
        "f0.jsonl",
    )
    _recent(f.created_at)
    assert f.model_extra == {"row_count": 16, "sha256": hashlib.sha256(body).hexdigest()}  # ours ride along
    assert client.files.retrieve(f.id) == f
    assert client.files.content(f.id).content == body  # the raw bytes

    # Auto-paging with limit=2 walks every page through the `after` cursor, newest first by default
    # (created_at is in seconds: files of the same second come in id order).
    page = client.files.list(purpose="fine-tune", limit=2)
    assert len(page.data) == 2 and page.has_more and all(isinstance(x, FileObject) for x in page.data)
    listed = list(page)
    ids = [x.id for x in listed]
    assert len(ids) == len(set(ids)) and {c.id for c in created} <= set(ids)
    assert [(x.created_at, x.id) for x in listed] == sorted(((x.created_at, x.id) for x in listed), reverse=True)
    ascending = list(client.files.list(order="asc", limit=3))
    assert [x.id for x in ascending] == ids[::-1]
    assert client.files.list(purpose="batch").data == []

    deleted = client.files.delete(created[-1].id)
    assert isinstance(deleted, FileDeleted) and _strict(FileDeleted, deleted)
    assert (deleted.id, deleted.object, deleted.deleted) == (created[-1].id, "file", True)
    with pytest.raises(openai.NotFoundError) as exc:
        client.files.retrieve(created[-1].id)
    assert exc.value.code is None and exc.value.param == "file_id" and created[-1].id in exc.value.message
    assert created[-1].id not in [x.id for x in client.files.list()]


def test_upload_errors_map_to_sdk_exceptions(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        client.files.create(file=("bad.jsonl", b'{"prompt": "a"}\nnot json\n'), purpose="fine-tune")
    assert exc.value.status_code == 400 and exc.value.param == "file"
    assert exc.value.body["message"].startswith("line 2: not valid JSON")  # type: ignore[index]
    with pytest.raises(openai.BadRequestError, match="purpose must be 'fine-tune'"):
        client.files.create(file=("a.jsonl", jsonl(ARITH_ROWS)), purpose="batch")


def test_openai_rft_body_runs_unchanged(client: OpenAI, train_file: FileObject) -> None:
    """OpenAI's own reinforcement hyperparameters plus suffix, seed, metadata and validation_file."""
    job = _create_job(
        client,
        train_file.id,
        hyperparameters=OPENAI_HP | {"max_completion_tokens": 8},  # unknown keys pass the SDK's TypedDict as-is
        suffix="sdk",
        seed=42,
        metadata={"team": "rl", "run": "openai-body"},
        validation_file=train_file.id,
    )
    assert isinstance(job, FineTuningJob) and _strict(FineTuningJob, job)
    assert (job.object, job.status, job.model, job.seed) == ("fine_tuning.job", "queued", TINY_ID, 42)
    assert (job.training_file, job.validation_file, job.metadata) == (
        train_file.id,
        train_file.id,
        {"team": "rl", "run": "openai-body"},
    )
    assert job.organization_id and job.result_files == [] and job.finished_at is None and job.error is None
    _recent(job.created_at)
    hp = job.method.reinforcement.hyperparameters  # type: ignore[union-attr]
    assert (hp.batch_size, hp.n_epochs, hp.learning_rate_multiplier) == (4, 1, 2.0)
    assert (hp.reasoning_effort, hp.compute_multiplier, hp.eval_interval, hp.eval_samples) == ("medium", 1.0, 0, 1)
    # GRPO's own fields, resolved: the LoRA default learning rate (the multiplier acts on top of it).
    assert hp.model_extra["learning_rate"] == DEFAULT_LEARNING_RATE and hp.model_extra["group_size"] == 8
    assert job.method.reinforcement.grader.type == "string_check"  # type: ignore[union-attr]
    # OpenAI's top-level hyperparameters (batch_size, learning_rate_multiplier, n_epochs) are there too.
    assert (job.hyperparameters.batch_size, job.hyperparameters.learning_rate_multiplier) == (4, 2.0)
    assert job.to_dict()["suffix"] == "sdk" and job.model_extra["total_steps"] == 4  # 16 rows / 4 per step
    assert client.fine_tuning.jobs.retrieve(job.id) == job

    warnings = [e.message for e in client.fine_tuning.jobs.list_events(job.id) if e.level == "warn"]
    assert any(m.startswith("reasoning_effort='medium' has no effect") for m in warnings), warnings
    assert not any("compute_multiplier" in m for m in warnings)  # 'auto' is the no-op default: no warning


def test_grpo_fields_via_extra_body_and_hyperparameter_errors(client: OpenAI, train_file: FileObject) -> None:
    # extra_body replaces `method` with one the SDK's types do not describe (a recipe, LoRA shape, our knobs).
    method = {
        "type": "reinforcement",
        "reinforcement": {
            "grader": GRADER,
            "hyperparameters": GRPO_HP | {"recipe": "dr_grpo", "lora": {"rank": 4, "alpha": 8}, "beta": 0.0},
        },
    }
    job = client.fine_tuning.jobs.create(
        model=TINY_ID, training_file=train_file.id, extra_body={"method": method, "seed": 3}
    )
    extra = job.method.reinforcement.hyperparameters.model_extra  # type: ignore[union-attr]
    assert extra["scale_rewards"] == "none" and extra["lora"]["rank"] == 4 and extra["beta"] == 0.0
    assert job.to_dict()["method"]["reinforcement"]["hyperparameters"]["recipe"] == "dr_grpo"

    with pytest.raises(openai.UnprocessableEntityError) as exc:  # a GRPO range check, our message
        _create_job(client, train_file.id, hyperparameters=GRPO_HP | {"group_size": 1})
    assert exc.value.param == "method.reinforcement.hyperparameters.group_size"
    assert exc.value.code == "validation_error" and "greater than or equal to 2" in exc.value.message
    with pytest.raises(openai.UnprocessableEntityError, match=r"is above 0\.01"):  # the multiplier is applied
        _create_job(
            client, train_file.id, hyperparameters=GRPO_HP | {"learning_rate": 0.01, "learning_rate_multiplier": 2}
        )
    with pytest.raises(openai.UnprocessableEntityError) as missing:  # OpenAI's body shape, checked by us
        client.fine_tuning.jobs.create(model=TINY_ID, training_file=train_file.id, method={"type": "reinforcement"})
    assert missing.value.param == "method.reinforcement" and "Field required" in missing.value.message


def test_job_errors_map_to_sdk_exceptions(client: OpenAI, train_file: FileObject) -> None:
    with pytest.raises(openai.NotFoundError) as nf:
        client.fine_tuning.jobs.retrieve("ftjob-nope")
    assert nf.value.status_code == 404 and nf.value.param == "fine_tuning_job_id"
    assert "no fine-tuning job with id 'ftjob-nope'" in nf.value.message
    method = {"type": "reinforcement", "reinforcement": {"grader": GRADER, "hyperparameters": GRPO_HP}}
    with pytest.raises(openai.BadRequestError) as bad:
        client.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=train_file.id, method=method)  # type: ignore[arg-type]
    assert (bad.value.status_code, bad.value.code, bad.value.param) == (400, "model_not_found", "model")
    assert "unknown model 'gpt-4o-mini'" in bad.value.message
    with pytest.raises(openai.NotFoundError) as nf2:
        _create_job(client, "file-missing")
    assert nf2.value.param == "training_file"


def test_jobs_list_pages_and_filters_on_metadata(client: OpenAI, train_file: FileObject) -> None:
    tag = secrets.token_hex(4)
    arm_a = [_create_job(client, train_file.id, metadata={"batch": tag, "arm": "a"}) for _ in range(3)]
    arm_b = [_create_job(client, train_file.id, metadata={"batch": tag, "arm": "b"}) for _ in range(2)]
    plain = _create_job(client, train_file.id)

    page = client.fine_tuning.jobs.list(limit=2)
    assert len(page.data) == 2 and page.has_more and all(isinstance(j, FineTuningJob) for j in page.data)
    every = list(page)  # auto-paging over at least 3 pages
    ids = [j.id for j in every]
    assert len(ids) == len(set(ids)) >= 6 and {j.id for j in [*arm_a, *arm_b, plain]} <= set(ids)
    assert [(j.created_at, j.id) for j in every] == sorted(((j.created_at, j.id) for j in every), reverse=True)

    # The SDK sends metadata={...} as metadata[k]=v; every pair must match.
    only_a = list(client.fine_tuning.jobs.list(limit=2, metadata={"batch": tag, "arm": "a"}))
    assert sorted(j.id for j in only_a) == sorted(j.id for j in arm_a)
    assert all(j.metadata == {"batch": tag, "arm": "a"} for j in only_a)
    assert len(list(client.fine_tuning.jobs.list(metadata={"batch": tag}))) == 5
    assert list(client.fine_tuning.jobs.list(metadata={"batch": tag, "arm": "c"})) == []
    # metadata=null (OpenAI's literal form; the SDK drops a None, so it goes as a raw query value)
    nulls = [j.id for j in client.fine_tuning.jobs.list(extra_query={"metadata": "null"})]
    assert plain.id in nulls and not {j.id for j in [*arm_a, *arm_b]} & set(nulls)
    with pytest.raises(openai.BadRequestError, match="cannot be combined") as exc:
        client.get("/fine_tuning/jobs", cast_to=object, options={"params": {"metadata": "null", "metadata[arm]": "a"}})
    assert exc.value.param == "metadata"


def test_pause_resume_cancel_and_conflicts_are_not_retried(client: OpenAI, train_file: FileObject) -> None:
    job = _create_job(client, train_file.id)
    paused = client.fine_tuning.jobs.pause(job.id)
    # 'paused' is a status OpenAI's pause produces but its SDK's Literal lacks: the SDK keeps the string.
    assert isinstance(paused, FineTuningJob) and paused.status == "paused"
    resumed = client.fine_tuning.jobs.resume(job.id)
    assert resumed.status == "queued" and _strict(FineTuningJob, resumed)
    cancelled = client.fine_tuning.jobs.cancel(job.id)
    assert cancelled.status == "cancelled" and _strict(FineTuningJob, cancelled)
    _recent(cancelled.finished_at)  # type: ignore[arg-type]
    assert client.fine_tuning.jobs.cancel(job.id).status == "cancelled"  # idempotent, as OpenAI's

    # The SDK retries every 409 (twice, with backoff) unless told not to: a state conflict says x-should-retry.
    t0 = time.monotonic()
    with pytest.raises(openai.ConflictError) as exc:
        client.fine_tuning.jobs.resume(job.id)
    assert time.monotonic() - t0 < 0.3, "the SDK retried a 409 that cannot succeed"
    assert exc.value.code == "job_not_paused" and exc.value.response.headers["x-should-retry"] == "false"
    with pytest.raises(openai.ConflictError, match="only a queued or running job can be paused"):
        client.fine_tuning.jobs.pause(job.id)
    messages = [e.message for e in client.fine_tuning.jobs.list_events(job.id)]
    assert messages[0] == "Job cancelled before it started" and "Job paused before it ran" in messages


def test_events_and_checkpoints_of_a_trained_job(
    client: OpenAI, worker_api: httpx.Client, train_file: FileObject
) -> None:
    """A 5-step job whose worker side is played through the internal API: metrics events, checkpoints, success."""
    job = _create_job(client, train_file.id, validation_file=train_file.id)
    claim = worker_api.post(f"/internal/jobs/{job.id}/claim", json={"worker_id": "sdk-test", "claim_id": "c" * 16})
    assert claim.status_code == 200, claim.text
    epoch = claim.json()["epoch"]
    valid = {1: 0.2, 2: 0.5, 3: 0.9, 4: 0.7, 5: 0.8}  # the best checkpoint is step 3's
    for step, v in valid.items():
        scores = {
            "train_reward_mean": step / 10,
            "valid_reward_mean": v,
            "graders": [{"name": "exact", "train_reward_mean": 0.5}],
        }
        event = metrics_event(step, 5, scores=scores)
        r = worker_api.post(f"/internal/jobs/{job.id}/events", json={"epoch": epoch, "events": [event]})
        assert r.status_code == 200, r.text
        ckpt = {"step": step, "train_reward_mean": step / 10, "valid_reward_mean": v}
        body = {"epoch": epoch, "step_number": step, "object_key": f"jobs/{job.id}/ckpt-{step}.tar", "metrics": ckpt}
        r = worker_api.post(f"/internal/jobs/{job.id}/checkpoints", json=body)
        assert r.status_code == 200, r.text
    r = worker_api.post(
        f"/internal/jobs/{job.id}/finish", json={"epoch": epoch, "status": "succeeded", "trained_tokens": 1234}
    )
    assert r.status_code == 200, r.text

    done = client.fine_tuning.jobs.retrieve(job.id)
    assert _strict(FineTuningJob, done) and done.status == "succeeded" and done.trained_tokens == 1234
    assert done.fine_tuned_model == f"ft:{TINY_ID}:rft:{job.id}" and done.model_extra["steps_done"] == 5
    _recent(done.finished_at)  # type: ignore[arg-type]

    page = client.fine_tuning.jobs.checkpoints.list(job.id, limit=2)
    assert len(page.data) == 2 and page.has_more
    ckpts = list(page)
    assert [c.step_number for c in ckpts] == [5, 4, 3, 2, 1]  # newest first, over 3 pages
    for c in ckpts:
        assert isinstance(c, FineTuningJobCheckpoint) and _strict(FineTuningJobCheckpoint, c)
        assert c.object == "fine_tuning.job.checkpoint" and c.fine_tuning_job_id == job.id
        assert c.fine_tuned_model_checkpoint.endswith(f"ckpt-step-{c.step_number}") and c.metrics.step == c.step_number
        assert c.metrics.model_extra["valid_reward_mean"] == valid[c.step_number]
        _recent(c.created_at)
    assert [c.step_number for c in ckpts if c.model_extra["best"]] == [3]

    events = list(client.fine_tuning.jobs.list_events(job.id, limit=2))
    assert len({e.id for e in events}) == len(events) > 10
    assert all(isinstance(e, FineTuningJobEvent) and _strict(FineTuningJobEvent, e) for e in events)
    assert events[0].message == "The job has successfully completed" and events[-1].message.startswith("Created")
    metrics = [e for e in events if e.type == "metrics"]
    assert [e.data["step"] for e in metrics] == [5, 4, 3, 2, 1]  # type: ignore[index]
    assert metrics[2].data["scores"]["valid_reward_mean"] == 0.9  # type: ignore[index]


def test_file_delete_is_refused_while_an_unfinished_job_uses_it(client: OpenAI) -> None:
    f = client.files.create(file=("used.jsonl", jsonl(ARITH_ROWS)), purpose="fine-tune")
    job = _create_job(client, f.id)
    t0 = time.monotonic()
    with pytest.raises(openai.ConflictError) as exc:
        client.files.delete(f.id)
    assert time.monotonic() - t0 < 0.3 and exc.value.response.headers["x-should-retry"] == "false"
    assert exc.value.code == "file_in_use" and job.id in exc.value.message and "queued" in exc.value.message
    assert client.files.retrieve(f.id).id == f.id  # nothing happened

    client.fine_tuning.jobs.cancel(job.id)
    assert client.files.delete(f.id).deleted
    for call in (client.files.retrieve, client.files.content, client.files.delete):
        with pytest.raises(openai.NotFoundError):
            call(f.id)
    assert client.fine_tuning.jobs.retrieve(job.id).training_file == f.id  # the finished job still names it
    with pytest.raises(openai.NotFoundError) as nf:
        _create_job(client, f.id)
    assert nf.value.param == "training_file"


def test_alpha_graders_run_and_validate(client: OpenAI) -> None:
    hit = client.fine_tuning.alpha.graders.run(grader=GRADER, model_sample="7", item={"answer": "7"})  # type: ignore[arg-type]
    assert isinstance(hit, GraderRunResponse) and _strict(GraderRunResponse, hit)
    assert hit.reward == 1.0 and hit.metadata.type == "string_check" and hit.metadata.name == "exact"
    assert not hit.metadata.errors.python_grader_runtime_error and not hit.metadata.errors.invalid_variable_error
    miss = client.fine_tuning.alpha.graders.run(grader=GRADER, model_sample="8", item={"answer": "7"})  # type: ignore[arg-type]
    assert miss.reward == 0.0

    ok = client.fine_tuning.alpha.graders.validate(grader=GRADER)  # type: ignore[arg-type]
    assert isinstance(ok, GraderValidateResponse) and _strict(GraderValidateResponse, ok)
    assert ok.grader is not None and ok.grader.type == "string_check"
    with pytest.raises(openai.UnprocessableEntityError) as exc:
        client.fine_tuning.alpha.graders.validate(grader=GRADER | {"operation": "contains"})  # type: ignore[arg-type]
    assert exc.value.param == "grader.operation"
