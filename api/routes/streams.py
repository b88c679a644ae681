"""What a running job exposes beyond OpenAI's events: its metric series, its rollouts, and a live event stream.

- ``GET …/jobs/{id}/metrics``: one item per step (the metrics event's data without the rollouts), oldest first,
  paginated by step (``after=<step>``) — the series a chart needs without paging through messages.
- ``GET …/jobs/{id}/samples?step=N``: the rollouts kept for a step (``sample_log_count``): prompt, completion,
  total and per-grader rewards, advantage; the latest step by default.
- ``GET …/jobs/{id}/events/stream``: server-sent events, oldest first, each with ``id: <sequence>`` so a client
  that reconnects with ``Last-Event-ID`` continues exactly where it stopped; the stream ends after the job's last
  event once the job is finished. ``samples=false`` leaves the rollouts out of the metrics events (the dashboard
  replays a long job's curves that way and reads a step's rollouts from …/samples).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from sqlalchemy import select

from api.db.models import TERMINAL, Job, JobEvent
from api.deps import CurrentProject, SessionDep
from api.errors import ERROR_RESPONSES, NotFound
from api.schemas.jobs import MetricsPage, MetricsPoint, SamplesResponse
from api.services import jobs as svc
from grpo_core.metrics_schema import Sample, StepMetrics

router = APIRouter(prefix="/v1/fine_tuning/jobs", tags=["fine_tuning"], responses=ERROR_RESPONSES)


def _metrics_events(job_id: str) -> Any:
    return select(JobEvent).where(JobEvent.job_id == job_id, JobEvent.type == "metrics")


@router.get("/{fine_tuning_job_id}/metrics")
def list_metrics(
    fine_tuning_job_id: str,
    session: SessionDep,
    project: CurrentProject,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[int | None, Query(ge=0, description="Return steps after this one.")] = None,
) -> MetricsPage:
    """The per-step metric series, oldest first (rollouts left out: see …/samples)."""
    svc.get_job(session, project, fine_tuning_job_id)
    q = _metrics_events(fine_tuning_job_id)
    if after is not None:
        q = q.where(JobEvent.step > after)
    rows = list(session.scalars(q.order_by(JobEvent.step).limit(limit + 1)))
    data = [
        MetricsPoint(
            step=r.step or 0, created_at=r.created_at, metrics=StepMetrics.model_validate(r.data | {"samples": []})
        )
        for r in rows[:limit]
    ]
    return MetricsPage(data=data, has_more=len(rows) > limit)


@router.get("/{fine_tuning_job_id}/samples")
def list_samples(
    fine_tuning_job_id: str,
    session: SessionDep,
    project: CurrentProject,
    step: Annotated[int | None, Query(ge=1, description="A step; the latest one by default.")] = None,
) -> SamplesResponse:
    """The rollouts kept for one step: prompt, completion, rewards (total and per grader), advantage."""
    svc.get_job(session, project, fine_tuning_job_id)
    q = _metrics_events(fine_tuning_job_id)
    q = q.where(JobEvent.step == step) if step is not None else q.order_by(JobEvent.step.desc())
    row = session.scalars(q.limit(1)).first()
    if row is None:
        raise NotFound(
            f"job {fine_tuning_job_id} has no metrics for step {step}" if step else "the job has no steps yet",
            param="step",
        )
    return SamplesResponse(step=row.step or 0, data=[Sample(**s) for s in (row.data or {}).get("samples", [])])


def _sse(row: JobEvent, samples: bool = True) -> str:
    data = row.data
    if not samples and data and "samples" in data:
        data = {k: v for k, v in data.items() if k != "samples"}
    body = {
        "object": "fine_tuning.job.event",
        "id": row.id,
        "created_at": row.created_at,
        "level": row.level,
        "type": row.type,
        "message": row.message,
        "data": data,
    }
    return f"id: {row.seq}\nevent: {row.type}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"


@router.get(
    "/{fine_tuning_job_id}/events/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events of the job."}},
)
def stream_events(
    fine_tuning_job_id: str,
    request: Request,
    session: SessionDep,
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
    svc.get_job(session, project, fine_tuning_job_id)
    start = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0
    sessions = request.app.state.sessionmaker

    def poll(after: int) -> tuple[str | None, list[JobEvent]]:
        with sessions() as s:
            # status first: a job's final events commit with its final status, so once the status reads
            # terminal, the query below sees every event it will ever have
            status = s.scalar(select(Job.status).where(Job.id == fine_tuning_job_id))
            rows = list(
                s.scalars(
                    select(JobEvent)
                    .where(JobEvent.job_id == fine_tuning_job_id, JobEvent.seq > after)
                    .order_by(JobEvent.seq)
                    .limit(200)
                )
            )
            s.expunge_all()
        return status, rows

    async def gen() -> AsyncIterator[str]:
        # async, so an open stream (a dashboard tab) holds no thread between polls: only each poll takes one
        seq, idle = start, 0.0
        while True:
            status, rows = await run_in_threadpool(poll, seq)
            for row in rows:
                seq = row.seq
                yield _sse(row, samples)
            if not rows and status in TERMINAL:
                return
            if rows:
                idle = 0.0
                continue
            idle += 1.0
            if idle >= 15:  # a comment keeps proxies from closing an idle stream
                idle = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(1.0)

    return StreamingResponse(gen(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
