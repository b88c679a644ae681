"""A job's events: written here (every state change and every worker post is one), read as OpenAI's newest-first
list, as the per-step metric series, as one step's rollouts, and as the live stream's polls (no FastAPI here)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session, sessionmaker

from api.core.errors import NotFound
from api.core.pagination import Page, anchor, keyset_page
from api.db.models import Job, JobEvent, new_id
from api.jobs.access import owned_job, require_job

STREAM_BATCH = 200  # events per poll of the stream


def add_event(
    session: Session,
    job_id: str,
    message: str,
    *,
    level: str = "info",
    type_: str = "message",
    step: int | None = None,
    data: dict[str, Any] | None = None,
) -> None:
    """Append one event in the caller's transaction (it commits with the change it reports)."""
    session.add(
        JobEvent(id=new_id("ftevent"), job_id=job_id, level=level, type=type_, message=message, step=step, data=data)
    )


def list_events(session: Session, project_id: str, job_id: str, *, limit: int, after: str | None) -> Page[JobEvent]:
    """Newest first, as OpenAI's list_events; ``after`` is the id of the last event of the previous page."""
    start = anchor(
        after, JobEvent.id == after, JobEvent.job_id == job_id, missing=f"no event {after!r} in job {job_id}"
    )
    query = select(JobEvent).where(JobEvent.job_id == job_id)
    job = owned_job(project_id, job_id)
    return keyset_page(session, query, [JobEvent.seq], limit=limit, descending=True, after=start, within=job)


def _metrics_events(job_id: str) -> Select[JobEvent]:
    return select(JobEvent).where(JobEvent.job_id == job_id, JobEvent.type == "metrics")


def list_metrics(session: Session, project_id: str, job_id: str, *, limit: int, after: int | None) -> Page[JobEvent]:
    """The metrics events, oldest first, after step ``after`` (one per step: the unique index guarantees it)."""
    query = _metrics_events(job_id)
    if after is not None:  # the cursor is the step number itself
        query = query.where(JobEvent.step > after)
    job = owned_job(project_id, job_id)
    return keyset_page(session, query, [JobEvent.step], limit=limit, descending=False, within=job)


def base_reward(session: Session, job_id: str) -> float | None:
    """The base model's mean reward on the job's task: step 1's train reward, sampled before any update (None
    before step 1 is recorded)."""
    query = select(JobEvent.data).where(JobEvent.job_id == job_id, JobEvent.type == "metrics", JobEvent.step == 1)
    data = session.scalar(query)
    value = ((data or {}).get("scores") or {}).get("train_reward_mean")
    return float(value) if value is not None else None


def step_event(session: Session, project_id: str, job_id: str, step: int | None) -> JobEvent:
    """The metrics event of ``step`` (the latest when None); 404 ``step`` when there is none."""
    require_job(session, project_id, job_id)
    q = _metrics_events(job_id)
    q = q.where(JobEvent.step == step) if step is not None else q.order_by(JobEvent.step.desc())
    row = session.scalars(q.limit(1)).first()
    if row is None:
        raise NotFound(
            f"job {job_id} has no metrics for step {step}" if step else "the job has no steps yet", param="step"
        )
    return row


def poll_stream(sessions: sessionmaker[Session], job_id: str, after: int) -> tuple[str | None, list[JobEvent]]:
    """The job's status and its events with a stream sequence above ``after`` (detached from their session).

    The status is read first: a job's final events commit with its final status, so once the status reads
    terminal, the events read after it are every event the job will ever have.
    """
    with sessions() as s:
        status = s.scalar(select(Job.status).where(Job.id == job_id))
        rows = list(
            s.scalars(
                select(JobEvent)
                .where(JobEvent.job_id == job_id, JobEvent.seq > after)
                .order_by(JobEvent.seq)
                .limit(STREAM_BATCH)
            )
        )
        s.expunge_all()
    return status, rows
