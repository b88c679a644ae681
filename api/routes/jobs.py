"""``/v1/fine_tuning/jobs``: OpenAI's job routes (create, list, retrieve, cancel, pause, resume, events,
checkpoints) and the checkpoint's adapter download. Each parses, calls one service, and shapes the answer.

The reads a running job is polled with (retrieve, events, lists) take an autocommit session, shared with the key
lookup, and run their body in one threadpool hop (``ReadSessionDep``, ``ReadingCaller``, ``in_one_hop``:
api.deps); retrieve, readiness and events run one plain SQL statement (api.services.polls) that also checks a
remembered key (api.callers), and fall back to the ORM read wherever it finds nothing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse, StreamingResponse

from api.deps import (
    CurrentProject,
    PollsDep,
    QueueDep,
    ReadingCaller,
    ReadSessionDep,
    SessionDep,
    SettingsDep,
    StoreDep,
    in_one_hop,
)
from api.errors import ERROR_RESPONSES
from api.idempotency import idempotent
from api.schemas.common import ListResponse
from api.schemas.jobs import Checkpoint, Job, JobCreate, JobEvent, JobReadiness
from api.services import access, checkpoints, events
from api.services import jobs as svc
from api.services.downloads import TAR, presigned_adapter
from api.services.openai_compat import METADATA_FILTER_PARAM
from api.services.polls import Guard

router = APIRouter(prefix="/v1/fine_tuning/jobs", tags=["fine_tuning"], responses=ERROR_RESPONSES)
Limit = Annotated[int, Query(ge=1, le=100)]


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
    return Job.from_row(svc.create_job(session, store, queue, settings, project_id=project, body=body))


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
    return Job.from_row(
        svc.create_job(session, store, queue, settings, project_id=project, body=body, preflight_only=True)
    )


@router.get("", openapi_extra={"parameters": [METADATA_FILTER_PARAM]})
@in_one_hop
def list_jobs(
    request: Request, session: ReadSessionDep, caller: ReadingCaller, limit: Limit = 20, after: str | None = None
) -> ListResponse[Job]:
    """Newest first. OpenAI's metadata filter: ``metadata[k]=v`` (all pairs must match) or ``metadata=null``."""
    page = svc.list_jobs(
        session, caller.verified(session), limit=limit, after=after, query=request.query_params.multi_items()
    )
    return ListResponse[Job].page([Job.from_row(r) for r in page.items], page.has_more)


@router.get("/{fine_tuning_job_id}")
@in_one_hop
def retrieve_job(fine_tuning_job_id: str, session: ReadSessionDep, caller: ReadingCaller, polls: PollsDep) -> Job:
    row = caller.read(
        session,
        lambda project, guard: polls.job(project, fine_tuning_job_id, guard),
        lambda project: access.get_job(session, project, fine_tuning_job_id),
    )
    return Job.from_row(row)


@router.post("/{fine_tuning_job_id}/cancel")
def cancel_job(fine_tuning_job_id: str, session: SessionDep, project: CurrentProject) -> Job:
    """Queued: cancelled at once. Running: ``cancelling`` until the worker stops after its current step."""
    return Job.from_row(svc.cancel_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/pause")
def pause_job(fine_tuning_job_id: str, session: SessionDep, project: CurrentProject) -> Job:
    """Queued: paused at once. Running: ``pausing`` until the worker checkpoints after its current step and
    frees itself; then ``paused``. Resume continues from that checkpoint. 409 for a finished job."""
    return Job.from_row(svc.pause_job(session, project, fine_tuning_job_id))


@router.post("/{fine_tuning_job_id}/resume")
def resume_job(fine_tuning_job_id: str, session: SessionDep, queue: QueueDep, project: CurrentProject) -> Job:
    """A paused job is queued again and continues from its last checkpoint (exact resume). 409 otherwise."""
    return Job.from_row(svc.resume_job(session, queue, project, fine_tuning_job_id))


@router.get("/{fine_tuning_job_id}/readiness")
@in_one_hop
def get_readiness(
    fine_tuning_job_id: str, session: ReadSessionDep, caller: ReadingCaller, polls: PollsDep
) -> JobReadiness:
    """The readiness probe's reports: the base model before training, the trained adapter after it, and the
    per-prompt comparison (each null until the worker has posted it; all null when no probe was asked for)."""
    row = caller.read(
        session,
        lambda project, guard: polls.job(project, fine_tuning_job_id, guard),
        lambda project: access.get_job(session, project, fine_tuning_job_id),
    )
    return JobReadiness.from_row(row)


@router.get("/{fine_tuning_job_id}/events", response_model=ListResponse[JobEvent])
@in_one_hop
def list_events(
    fine_tuning_job_id: str,
    session: ReadSessionDep,
    caller: ReadingCaller,
    polls: PollsDep,
    limit: Limit = 20,
    after: str | None = None,
) -> Response:
    """Status messages and per-step metrics, newest first."""

    def slow(project: str) -> bytes:
        page = events.list_events(session, project, fine_tuning_job_id, limit=limit, after=after)
        return polls.render(page.items, page.has_more)

    def fast(project: str, guard: Guard) -> bytes | None:
        return polls.event_page(project, fine_tuning_job_id, limit=limit, after=after, guard=guard)

    return Response(caller.read(session, fast, slow), media_type="application/json")


@router.get("/{fine_tuning_job_id}/checkpoints")
@in_one_hop
def list_checkpoints(
    fine_tuning_job_id: str,
    session: ReadSessionDep,
    caller: ReadingCaller,
    limit: Limit = 10,
    after: str | None = None,
) -> ListResponse[Checkpoint]:
    project = caller.verified(session)
    found = checkpoints.list_checkpoints(session, project, fine_tuning_job_id, limit=limit, after=after)
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
    url, filename = presigned_adapter(store, ckpt)
    if url is not None:
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
    return StreamingResponse(
        store.iter_bytes(ckpt.object_key),
        media_type=TAR,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
