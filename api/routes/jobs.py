from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse, StreamingResponse

from api.db.models import Checkpoint as CheckpointRow
from api.db.models import Job as JobRow
from api.db.models import JobEvent as EventRow
from api.deps import CurrentProject, SessionDep, StoreDep
from api.errors import ERROR_RESPONSES
from api.idempotency import JsonIdempotencyDep
from api.queue import enqueue_run_job
from api.routes.downloads import presigned_adapter
from api.schemas.common import ListResponse
from api.schemas.jobs import Checkpoint, Job, JobCreate, JobError, JobEvent
from api.services import graders as graders_svc
from api.services import jobs as svc
from api.services.openai_compat import METADATA_FILTER_PARAM, metadata_filters
from grpo_core.metrics_schema import CheckpointMetrics, StepMetrics

router = APIRouter(prefix="/v1/fine_tuning/jobs", tags=["fine_tuning"], responses=ERROR_RESPONSES)
Limit = Annotated[int, Query(ge=1, le=100)]


def job_schema(row: JobRow) -> Job:
    return Job(
        id=row.id,
        model=row.model,
        created_at=row.created_at,
        finished_at=row.finished_at,
        fine_tuned_model=row.fine_tuned_model,
        organization_id=row.project_id,
        status=row.status,
        training_file=row.training_file,
        validation_file=row.validation_file,
        trained_tokens=row.trained_tokens,
        seed=row.seed,
        suffix=row.suffix,
        metadata=row.metadata_,
        error=JobError(**row.error) if row.error else None,
        hyperparameters=row.method["reinforcement"]["hyperparameters"],
        method=row.method,
        total_steps=row.total_steps,
        steps_done=row.steps_done,
    )


def event_schema(row: EventRow) -> JobEvent:
    return JobEvent(
        id=row.id,
        created_at=row.created_at,
        level=row.level,
        message=row.message,
        type=row.type,
        data=StepMetrics.model_validate(row.data) if row.data is not None else None,
    )


GRADER_PARAM = "method.reinforcement.grader"


def head_rows(store: Any, key: str, n: int) -> list[dict[str, Any]]:
    """The first ``n`` rows of an uploaded JSONL file (validated at upload), reading no more than needed."""
    rows: list[dict[str, Any]] = []
    pending = b""
    for chunk in store.iter_bytes(key):
        *lines, pending = (pending + chunk).split(b"\n")
        rows += [json.loads(line.decode("utf-8-sig")) for line in lines if line.strip()]
        if len(rows) >= n:
            return rows[:n]
    if pending.strip():
        rows.append(json.loads(pending.decode("utf-8-sig")))
    return rows[:n]


def checkpoint_schema(row: CheckpointRow, job: JobRow, best_id: str | None = None) -> Checkpoint:
    return Checkpoint(
        best=row.id == best_id,
        id=row.id,
        created_at=row.created_at,
        fine_tuning_job_id=row.job_id,
        step_number=row.step_number,
        fine_tuned_model_checkpoint=f"ft:{job.model}:{job.suffix or 'rft'}:{job.id}:ckpt-step-{row.step_number}",
        metrics=CheckpointMetrics.model_validate(row.metrics or {}),
    )


@router.post("", status_code=201)
def create_job(
    body: JobCreate, request: Request, session: SessionDep, project: CurrentProject, idem: JsonIdempotencyDep
) -> Job:
    """Validate and queue a GRPO job. Unknown model: 400; unknown file: 404; bad hyperparameter: 422.

    With an ``Idempotency-Key`` a retry replays the first response (header ``Idempotent-Replayed: true``).
    """
    producer = request.app.state.producer
    settings = request.app.state.settings
    return idem.run(
        lambda: job_schema(
            svc.create_job(
                session,
                project_id=project,
                body=body,
                models_dir=request.app.state.settings.models_dir,
                enqueue=lambda job_id: enqueue_run_job(producer, job_id),
                caps=request.app.state.settings.caps,
                preflight=lambda spec, rows: graders_svc.dry_run(spec, rows, settings.grader_env(), GRADER_PARAM),
                head_rows=lambda key, n: head_rows(request.app.state.store, key, n),
                max_attempts=settings.max_attempts,
                max_active_jobs=settings.max_active_jobs_per_project,
            )
        ),
        status_code=201,
    )


@router.get("", openapi_extra={"parameters": [METADATA_FILTER_PARAM]})
def list_jobs(
    request: Request, session: SessionDep, project: CurrentProject, limit: Limit = 20, after: str | None = None
) -> ListResponse[Job]:
    """Newest first. OpenAI's metadata filter: ``metadata[k]=v`` (all pairs must match) or ``metadata=null``."""
    filters = metadata_filters(request.query_params.multi_items(), session.get_bind().dialect.name)
    rows, more = svc.list_jobs(session, project, limit=limit, after=after, filters=filters)
    return ListResponse[Job].page([job_schema(r) for r in rows], more)


@router.get("/{fine_tuning_job_id}")
def retrieve_job(fine_tuning_job_id: str, session: SessionDep, project: CurrentProject) -> Job:
    return job_schema(svc.get_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/cancel")
def cancel_job(fine_tuning_job_id: str, session: SessionDep, project: CurrentProject) -> Job:
    """Queued: cancelled at once. Running: ``cancelling`` until the worker stops after its current step."""
    return job_schema(svc.cancel_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/pause")
def pause_job(fine_tuning_job_id: str, session: SessionDep, project: CurrentProject) -> Job:
    """Queued: paused at once. Running: ``pausing`` until the worker checkpoints after its current step and
    frees itself; then ``paused``. Resume continues from that checkpoint. 409 for a finished job."""
    return job_schema(svc.pause_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/resume")
def resume_job(fine_tuning_job_id: str, request: Request, session: SessionDep, project: CurrentProject) -> Job:
    """A paused job is queued again and continues from its last checkpoint (exact resume). 409 otherwise."""
    producer = request.app.state.producer
    job = svc.resume_job(session, project, fine_tuning_job_id, lambda job_id: enqueue_run_job(producer, job_id))
    return job_schema(job)


@router.get("/{fine_tuning_job_id}/events")
def list_events(
    fine_tuning_job_id: str,
    session: SessionDep,
    project: CurrentProject,
    limit: Limit = 20,
    after: str | None = None,
) -> ListResponse[JobEvent]:
    """Status messages and per-step metrics, newest first."""
    rows, more = svc.list_events(session, project, fine_tuning_job_id, limit=limit, after=after)
    return ListResponse[JobEvent].page([event_schema(r) for r in rows], more)


@router.get("/{fine_tuning_job_id}/checkpoints")
def list_checkpoints(
    fine_tuning_job_id: str,
    session: SessionDep,
    project: CurrentProject,
    limit: Limit = 10,
    after: str | None = None,
) -> ListResponse[Checkpoint]:
    job = svc.get_job(session, project, fine_tuning_job_id)
    rows, more = svc.list_checkpoints(session, project, fine_tuning_job_id, limit=limit, after=after)
    best = svc.best_checkpoint_id(session, job.id)
    return ListResponse[Checkpoint].page([checkpoint_schema(r, job, best) for r in rows], more)


@router.get(
    "/{fine_tuning_job_id}/checkpoints/{checkpoint_id}/content",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/x-tar": {}},
            "description": "adapter_config.json and adapter_model.safetensors, loadable with PeftModel.from_pretrained",
        },
        302: {"description": "On S3: a presigned URL of the tar, valid for 5 minutes (Location header)"},
    },
)
def download_checkpoint(
    fine_tuning_job_id: str, checkpoint_id: str, session: SessionDep, store: StoreDep, project: CurrentProject
) -> Response:
    """The PEFT LoRA adapter of a checkpoint, as a tar: streamed from a local store, or a 302 to a presigned
    S3 URL (5 minutes) so the bytes never pass through the API."""
    ckpt = svc.get_checkpoint(session, project, fine_tuning_job_id, checkpoint_id)
    url, filename = presigned_adapter(store, ckpt)
    if url is not None:
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
    return StreamingResponse(
        store.iter_bytes(ckpt.object_key),
        media_type="application/x-tar",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
