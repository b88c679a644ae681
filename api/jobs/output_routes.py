"""What a running job exposes beyond OpenAI's events: its metric series, its rollouts, and a live event stream.

- ``GET …/jobs/{id}/metrics``: one item per step (the metrics event's data without the rollouts), oldest first,
  paginated by step (``after=<step>``) — the series a chart needs without paging through messages.
- ``GET …/jobs/{id}/samples?step=N``: the rollouts kept for a step (``sample_log_count``): prompt, completion,
  total and per-grader rewards, advantage; the latest step by default.
- ``GET …/jobs/{id}/events/stream``: server-sent events, oldest first, each with ``id: <sequence>`` so a client
  that reconnects with ``Last-Event-ID`` continues exactly where it stopped; the stream ends after the job's last
  event once the job is finished. ``samples=false`` leaves the rollouts out of the metrics events (the dashboard
  replays a long job's curves that way and reads a step's rollouts from …/samples).
- ``GET …/jobs/{id}/checkpoints/{ckpt}/download_link``: a URL that fetches the checkpoint's adapter for 5 minutes
  without an ``Authorization`` header (a presigned S3 URL, or ``/v1/downloads/{token}`` signed by the API for the
  local store, served by ``downloads`` below: the signed token is the credential; api.checkpoints.downloads).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from api.checkpoints.downloads import TAR, adapter_link, linked_object
from api.core.deps import CurrentProject, SessionDep, SettingsDep, StoreDep
from api.core.errors import ERROR_RESPONSES
from api.db.models import TERMINAL
from api.jobs import access, events
from api.jobs.schemas import DownloadLink, JobEvent, MetricsPage, MetricsPoint, SamplesResponse

router = APIRouter(prefix="/v1/fine_tuning/jobs", tags=["fine_tuning"], responses=ERROR_RESPONSES)
downloads = APIRouter(tags=["fine_tuning"], responses=ERROR_RESPONSES)  # signed links: outside the jobs' prefix
KEEP_ALIVE_SECONDS = 15  # a comment this often keeps proxies from closing an idle stream


@router.get("/{fine_tuning_job_id}/metrics")
def list_metrics(
    fine_tuning_job_id: str,
    session: SessionDep,
    project: CurrentProject,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[int | None, Query(ge=0, description="Return steps after this one.")] = None,
) -> MetricsPage:
    """The per-step metric series, oldest first (rollouts left out: see …/samples), each with the job's running
    cost and, on a validation step, the reward gained over the base model and per unit of cost."""
    page = events.list_metrics(session, project, fine_tuning_job_id, limit=limit, after=after)
    base = events.base_reward(session, fine_tuning_job_id) if page.items else None
    return MetricsPage(data=[MetricsPoint.from_row(r, base) for r in page.items], has_more=page.has_more)


@router.get("/{fine_tuning_job_id}/samples")
def list_samples(
    fine_tuning_job_id: str,
    session: SessionDep,
    project: CurrentProject,
    step: Annotated[int | None, Query(ge=1, description="A step; the latest one by default.")] = None,
) -> SamplesResponse:
    """The rollouts kept for one step: prompt, completion, rewards (total and per grader), advantage."""
    return SamplesResponse.from_row(events.step_event(session, project, fine_tuning_job_id, step))


def _sse(event: JobEvent, seq: int) -> str:
    return f"id: {seq}\nevent: {event.type}\ndata: {event.model_dump_json()}\n\n"


@router.get(
    "/{fine_tuning_job_id}/events/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events of the job."}},
)
def stream_events(
    fine_tuning_job_id: str,
    request: Request,
    project: CurrentProject,
    last_event_id: Annotated[str | None, Header(description="Resume after this event's stream id.")] = None,
    samples: Annotated[
        bool,
        Query(
            description="Keep each metrics event's rollouts (data.samples). false: a light replay of a long job; "
            "…/samples?step=N has them per step."
        ),
    ] = True,
) -> StreamingResponse:
    """The job's events as server-sent events, oldest first; resumes after ``Last-Event-ID``."""
    # Short sessions only: a request's session lives until its response is sent, a stream's for hours, and one
    # held per open dashboard tab (idle in a transaction, as it was) would empty the pool for every other request.
    sessions = request.app.state.read_sessionmaker  # each poll reads twice, no transaction needed
    with sessions() as session:
        access.require_job(session, project, fine_tuning_job_id)
    start = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0

    async def gen() -> AsyncIterator[str]:
        # async, so an open stream (a dashboard tab) holds no thread between polls: only each poll takes one
        seq, idle = start, 0.0
        while True:
            status, rows = await run_in_threadpool(events.poll_stream, sessions, fine_tuning_job_id, seq)
            for row in rows:
                seq = row.seq
                yield _sse(JobEvent.from_row(row, samples=samples), row.seq)
            if not rows and status in TERMINAL:
                return
            if rows:
                idle = 0.0
                continue
            idle += 1.0
            if idle >= KEEP_ALIVE_SECONDS:
                idle = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(1.0)

    return StreamingResponse(gen(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@router.get("/{fine_tuning_job_id}/checkpoints/{checkpoint_id}/download_link")
def checkpoint_download_link(
    fine_tuning_job_id: str,
    checkpoint_id: str,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    project: CurrentProject,
) -> DownloadLink:
    """A URL that downloads the checkpoint's adapter tar for 5 minutes, no API key needed (for links)."""
    link = adapter_link(store, settings, access.get_checkpoint(session, project, fine_tuning_job_id, checkpoint_id))
    if link.url is not None:
        return DownloadLink(url=link.url, expires_at=link.expires_at)
    if settings.public_url:  # behind a TLS proxy: where users reach the API, not what this request says
        url = f"{settings.public_url.rstrip('/')}{request.app.url_path_for('download', token=link.token)}"
    else:
        url = str(request.url_for("download", token=link.token))
    return DownloadLink(url=url, expires_at=link.expires_at)


@downloads.get(
    "/v1/downloads/{token}",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The linked object."}},
)
def download(token: str, store: StoreDep, settings: SettingsDep) -> StreamingResponse:
    """The object a download link names (no API key: the signed token is the credential)."""
    key, filename = linked_object(store, settings, token)
    return StreamingResponse(
        store.iter_bytes(key),
        media_type=TAR if filename.endswith(".tar") else "application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )
