"""``/v1/fine_tuning/jobs``: OpenAI's job routes (create, list, retrieve, cancel, pause, resume, events,
checkpoints) and the checkpoint's adapter download. Each parses, calls one service, and shapes the answer.

The reads a running job is polled with (retrieve, readiness, events, the lists) go through ``JobReaderDep``
(api.jobs.polls.JobReader: one plain SQL statement a poll where it can) and run their body in one threadpool hop
(``in_one_hop``, api.core.deps)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from api.checkpoints.downloads import TAR, tar_response
from api.core.callers import Caller
from api.core.deps import (
    CurrentProject,
    QueueDep,
    ReadSessionDep,
    SessionDep,
    SettingsDep,
    StoreDep,
    in_one_hop,
)
from api.core.errors import ERROR_RESPONSES
from api.core.idempotency import idempotent
from api.core.pagination import ListResponse
from api.core.settings import ApiSettings
from api.db import models as db
from api.jobs import access, budget, scheduling
from api.jobs import service as svc
from api.jobs.openai_compat import METADATA_FILTER_PARAM
from api.jobs.polls import JobReader
from api.jobs.schemas import Checkpoint, Job, JobBudget, JobCreate, JobEvent, JobReadiness
from api.usage import service as usage
from api.usage.prices import price_book
from api.usage.schemas import JobUsage

router = APIRouter(prefix="/v1/fine_tuning/jobs", tags=["fine_tuning"], responses=ERROR_RESPONSES)
Limit = Annotated[int, Query(ge=1, le=100)]


async def job_reader(
    request: Request,
    session: ReadSessionDep,
    settings: SettingsDep,
    authorization: Annotated[str | None, Header()] = None,
) -> JobReader:
    """The polled reads of a job (api.jobs.polls.JobReader) for a route whose body runs ``in_one_hop``. No I/O here,
    so no hop of its own: the caller is checked inside the read's own query, or resolved on the read's session when
    the process does not remember the key (one session and one pooled connection a request instead of two)."""
    caller = Caller.of(settings, request.app.state.key_cache, authorization)
    return JobReader(session, caller, request.app.state.polls)


JobReaderDep = Annotated[JobReader, Depends(job_reader)]


@router.post("", status_code=201)
@idempotent(status_code=201)
def create_job(
    body: JobCreate,
    session: SessionDep,
    store: StoreDep,
    queue: QueueDep,
    settings: SettingsDep,
    project: CurrentProject,
) -> Job:
    """Validate and queue a GRPO job. Unknown model: 400; unknown file: 404; bad hyperparameter: 422.

    With an ``Idempotency-Key`` a retry replays the first response (header ``Idempotent-Replayed: true``).
    """
    return shaped(session, settings, svc.create_job(session, store, queue, settings, project_id=project, body=body))


@router.post("/preflight", status_code=201)
@idempotent(status_code=201)
def create_preflight(
    body: JobCreate,
    session: SessionDep,
    store: StoreDep,
    queue: QueueDep,
    settings: SettingsDep,
    project: CurrentProject,
) -> Job:
    """An RL-readiness report without training: the same body as a job, checked the same way, run by a worker
    that probes the base model and stops (``hyperparameters.preflight`` sets the probe; ``only`` is forced).
    The job succeeds with no ``fine_tuned_model``; ``GET …/{id}/readiness`` has the report."""
    job = svc.create_job(session, store, queue, settings, project_id=project, body=body, preflight_only=True)
    return shaped(session, settings, job)


@router.get("", openapi_extra={"parameters": [METADATA_FILTER_PARAM]})
@in_one_hop
def list_jobs(
    request: Request, reader: JobReaderDep, settings: SettingsDep, limit: Limit = 20, after: str | None = None
) -> ListResponse[Job]:
    """Newest first. OpenAI's metadata filter: ``metadata[k]=v`` (all pairs must match) or ``metadata=null``."""
    page = reader.jobs(limit=limit, after=after, query=request.query_params.multi_items())
    return ListResponse[Job].page(shaped_all(reader.session, settings, page.items), page.has_more)


@router.get("/{fine_tuning_job_id}")
@in_one_hop
def retrieve_job(fine_tuning_job_id: str, reader: JobReaderDep, settings: SettingsDep) -> Job:
    """The job; a queued one says why it waits (``waiting``)."""
    return shaped(reader.session, settings, reader.job(fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/cancel")
def cancel_job(fine_tuning_job_id: str, session: SessionDep, settings: SettingsDep, project: CurrentProject) -> Job:
    """Queued: cancelled at once. Running: ``cancelling`` until the worker stops after its current step."""
    return shaped(session, settings, svc.cancel_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/pause")
def pause_job(fine_tuning_job_id: str, session: SessionDep, settings: SettingsDep, project: CurrentProject) -> Job:
    """Queued: paused at once. Running: ``pausing`` until the worker checkpoints after its current step and
    frees itself; then ``paused``. Resume continues from that checkpoint. 409 for a finished job."""
    return shaped(session, settings, svc.pause_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/resume")
def resume_job(
    fine_tuning_job_id: str, session: SessionDep, queue: QueueDep, settings: SettingsDep, project: CurrentProject
) -> Job:
    """A paused job is queued again and continues from its last checkpoint (exact resume). 409 otherwise."""
    return shaped(session, settings, svc.resume_job(session, queue, settings, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/budget")
def set_budget(
    fine_tuning_job_id: str, body: JobBudget, session: SessionDep, settings: SettingsDep, project: CurrentProject
) -> Job:
    """Replace the job's budget (``max_cost``, ``max_device_hours``; both null: none). A job paused at its cap
    stays paused until it is resumed; the change is logged for the operator."""
    job = budget.set_budget(session, project, fine_tuning_job_id, body, actor=f"project:{project}")
    return shaped(session, settings, job)


def shaped_all(session: Session, settings: ApiSettings, rows: Sequence[db.Job]) -> list[Job]:
    """The response of each job, with what is read beside its row (a queued job's ``waiting``, the usage of those
    that ever started) read once for all."""
    why = scheduling.waiting(session, settings, rows)
    started = [r for r in rows if r.started_at is not None]  # a queued job's poll stays one query: no usage yet
    used: dict[str, JobUsage] = {}
    if started:
        projects = {r.project_id for r in started}  # one, but for the operator's views
        book = price_book(session, settings, projects)
        for p in projects:
            used |= usage.job_usage(session, [r.id for r in started if r.project_id == p], book.of(p))
    return [Job.from_row(r, waiting=why.get(r.id), usage=used.get(r.id)) for r in rows]


def shaped(session: Session, settings: ApiSettings, row: db.Job) -> Job:
    return shaped_all(session, settings, [row])[0]


@router.get("/{fine_tuning_job_id}/readiness")
@in_one_hop
def get_readiness(fine_tuning_job_id: str, reader: JobReaderDep) -> JobReadiness:
    """The readiness probe's reports: the base model before training, the trained adapter after it, and the
    per-prompt comparison (each null until the worker has posted it; all null when no probe was asked for)."""
    return JobReadiness.from_row(reader.job(fine_tuning_job_id))


@router.get("/{fine_tuning_job_id}/events", response_model=ListResponse[JobEvent])
@in_one_hop
def list_events(fine_tuning_job_id: str, reader: JobReaderDep, limit: Limit = 20, after: str | None = None) -> Response:
    """Status messages and per-step metrics, newest first."""
    page = reader.event_page(fine_tuning_job_id, limit=limit, after=after)  # ListResponse[JobEvent]'s JSON
    return Response(page, media_type="application/json")


@router.get("/{fine_tuning_job_id}/checkpoints")
@in_one_hop
def list_checkpoints(
    fine_tuning_job_id: str, reader: JobReaderDep, limit: Limit = 10, after: str | None = None
) -> ListResponse[Checkpoint]:
    found = reader.checkpoints(fine_tuning_job_id, limit=limit, after=after)
    items = [Checkpoint.from_row(r, found.job, found.best_id) for r in found.page.items]
    return ListResponse[Checkpoint].page(items, found.page.has_more)


@router.get(
    "/{fine_tuning_job_id}/checkpoints/{checkpoint_id}/content",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {TAR: {}},
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
    ckpt = access.get_checkpoint(session, project, fine_tuning_job_id, checkpoint_id)
    return tar_response(store, ckpt)
