"""Job rules and state transitions (no FastAPI).

Every status change is one guarded ``UPDATE … WHERE id = :id AND status IN (…)`` (plus, for workers, the lease
epoch), so a user's cancel and a worker's write cannot race into an impossible state, and a worker holding a
stale lease (a second delivery of the same task, a worker that was presumed dead) can never write.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError
from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from api.db.models import Checkpoint, Job, JobEvent, JobStatus, new_id, now
from api.errors import Conflict, InvalidRequest, NotFound, TooManyRequests, Unprocessable
from api.schemas.jobs import JobCreate
from api.services.files import get_file
from api.services.openai_compat import ignored_field_warnings
from api.services.webhooks import record_job_event
from grpo_core.config import apply_caps
from grpo_core.models import list_models
from grpo_core.rewards.schemas import reward_columns

log = logging.getLogger(__name__)
HP = "method.reinforcement.hyperparameters"
UNFINISHED = (JobStatus.queued, JobStatus.running, JobStatus.cancelling, JobStatus.pausing)


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
    session.add(
        JobEvent(
            id=new_id("ftevent"),
            job_id=job_id,
            level=level,
            type=type_,
            message=message,
            step=step,
            data=data,
        )
    )


def create_job(
    session: Session,
    *,
    project_id: str,
    body: JobCreate,
    models_dir: Any,
    enqueue: Callable[[str], None],
    caps: dict[str, int | None] | None = None,
    preflight: Callable[[Any, list[dict[str, Any]]], None] | None = None,
    head_rows: Callable[[str, int], list[dict[str, Any]]] | None = None,
    max_attempts: int = 3,
    max_active_jobs: int | None = None,
) -> Job:
    """Validate everything a worker would trip over, store the job ``queued``, then enqueue it (after commit)."""
    if body.model not in list_models(models_dir):
        known = ", ".join(list_models(models_dir)) or "none installed"
        raise InvalidRequest(
            f"unknown model {body.model!r} (available: {known})", param="model", code="model_not_found"
        )
    active = session.scalar(
        select(func.count()).select_from(Job).where(Job.project_id == project_id, Job.status.in_(list(UNFINISHED)))
    )
    if max_active_jobs and active >= max_active_jobs:
        raise TooManyRequests(
            f"this project already has {active} unfinished jobs; the quota is {max_active_jobs} "
            "(max_active_jobs_per_project): wait for one to finish or cancel one",
            param="quota",
            code="quota_exceeded",
            headers={"Retry-After": "60"},
        )
    # FOR SHARE (PostgreSQL): a concurrent DELETE /v1/files/{id} waits for this job, then sees it and refuses.
    train = get_file(session, project_id, body.training_file, param="training_file", for_share=True)
    if body.validation_file is not None:
        get_file(session, project_id, body.validation_file, param="validation_file", for_share=True)
    try:
        cfg, capped = apply_caps(body.method.reinforcement.hyperparameters, caps or {})
    except ValidationError as exc:
        raise Unprocessable(f"hyperparameters are invalid under this service's limits: {exc}", param=HP) from None
    method = body.method.model_dump(mode="json")
    method["reinforcement"]["hyperparameters"] = cfg.model_dump(mode="json")
    columns = reward_columns(body.method.reinforcement.grader)
    if cfg.reward_weights is not None and len(cfg.reward_weights) != len(columns):
        raise Unprocessable(
            f"reward_weights has {len(cfg.reward_weights)} weights for {len(columns)} reward columns {columns}",
            param=f"{HP}.reward_weights",
        )
    if preflight is not None and head_rows is not None:  # the grader on a few real rows, before any GPU time
        preflight(body.method.reinforcement.grader, head_rows(train.object_key, 3))
    if cfg.batch_size > train.row_count:
        raise Unprocessable(
            f"batch_size={cfg.batch_size} is larger than the training file ({train.row_count} rows)",
            param=f"{HP}.batch_size",
        )
    job = Job(
        id=new_id("ftjob"),
        project_id=project_id,
        model=body.model,
        training_file=train.id,
        validation_file=body.validation_file,
        seed=body.seed if body.seed is not None else secrets.randbelow(2**31),
        suffix=body.suffix,
        metadata_=body.metadata,
        method=method,
        status=JobStatus.queued,
        total_steps=cfg.total_steps(train.row_count),
        max_attempts=max_attempts,
    )
    session.add(job)
    session.flush()
    add_event(session, job.id, f"Created fine-tuning job: {job.id}")
    add_event(session, job.id, f"Validated training file: {train.row_count} rows; {job.total_steps} steps planned")
    for message in capped + ignored_field_warnings(cfg):
        add_event(session, job.id, message, level="warn")
    session.commit()
    # Queue after commit: a worker can never receive an id whose row it cannot see yet. If the broker is
    # down the job stays queued (and says so); the reaper rings again (api.services.reaper).
    try:
        enqueue(job.id)
        job.enqueued_at = now()
        add_event(session, job.id, "Job queued")
    except Exception as exc:  # broker down: never lose the job, never fail the request
        log.exception("enqueue failed for %s", job.id)
        add_event(
            session,
            job.id,
            f"Could not reach the job queue ({type(exc).__name__}); the job stays queued",
            level="warn",
        )
    session.commit()
    return job


def get_job(session: Session, project_id: str, job_id: str) -> Job:
    job = session.scalar(select(Job).where(Job.id == job_id, Job.project_id == project_id))
    if job is None:
        raise NotFound(f"no fine-tuning job with id {job_id!r}", param="fine_tuning_job_id")
    return job


def list_jobs(
    session: Session, project_id: str, *, limit: int, after: str | None, filters: Iterable[Any] = ()
) -> tuple[list[Job], bool]:
    """Newest first; ``filters`` are extra SQL conditions (OpenAI's metadata filter, api.services.openai_compat)."""
    q = select(Job).where(Job.project_id == project_id, *filters)
    if after:
        ref = session.scalar(select(Job).where(Job.id == after, Job.project_id == project_id))
        if ref is None:
            raise NotFound(f"no fine-tuning job {after!r} to page after", param="after")
        q = q.where(or_(Job.created_at < ref.created_at, and_(Job.created_at == ref.created_at, Job.id < ref.id)))
    rows = list(session.scalars(q.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit + 1)))
    return rows[:limit], len(rows) > limit


def _set_status(session: Session, job_id: str, allowed: Iterable[str], **values: Any) -> bool:
    res = session.execute(update(Job).where(Job.id == job_id, Job.status.in_(list(allowed))).values(**values))
    return res.rowcount == 1


def cancel_job(session: Session, project_id: str, job_id: str) -> Job:
    """Idempotent. queued or paused -> cancelled at once; running or pausing -> cancelling (the worker
    checkpoints and stops at the next step boundary; the reaper finishes it if the worker is gone)."""
    job = get_job(session, project_id, job_id)
    if _set_status(
        session, job_id, [JobStatus.queued, JobStatus.paused], status=JobStatus.cancelled, finished_at=now()
    ):
        add_event(
            session,
            job_id,
            "Job cancelled before it ran again" if job.started_at else "Job cancelled before it started",
        )
        record_job_event(session, job, "fine_tuning.job.cancelled")
    elif _set_status(session, job_id, [JobStatus.running, JobStatus.pausing], status=JobStatus.cancelling):
        add_event(session, job_id, "Cancellation requested; the job stops after the current step")
    else:
        session.refresh(job)
        if job.status not in (JobStatus.cancelling, JobStatus.cancelled):
            raise Conflict(
                f"job {job_id} has already {job.status}; only an unfinished job can be cancelled",
                param="fine_tuning_job_id",
                code="job_not_cancellable",
            )
    session.commit()
    session.refresh(job)
    return job


def pause_job(session: Session, project_id: str, job_id: str) -> Job:
    """Idempotent (OpenAI's pause). queued -> paused at once; running -> pausing: the worker checkpoints at the
    next step boundary, frees itself and the job becomes paused, holding that checkpoint."""
    job = get_job(session, project_id, job_id)
    if _set_status(session, job_id, [JobStatus.queued], status=JobStatus.paused):
        add_event(session, job_id, "Job paused before it ran")
    elif _set_status(session, job_id, [JobStatus.running], status=JobStatus.pausing):
        add_event(session, job_id, "Pause requested; the job checkpoints and stops after the current step")
    else:
        session.refresh(job)
        if job.status not in (JobStatus.pausing, JobStatus.paused):
            raise Conflict(
                f"job {job_id} is {job.status}; only a queued or running job can be paused",
                param="fine_tuning_job_id",
                code="job_not_pausable",
            )
    session.commit()
    session.refresh(job)
    return job


def resume_job(session: Session, project_id: str, job_id: str, enqueue: Callable[[str], None]) -> Job:
    """paused -> queued with a fresh attempt budget; the claim resumes from the checkpoint taken at the pause."""
    job = get_job(session, project_id, job_id)
    values = {
        "status": JobStatus.queued,
        "attempts": 0,
        "not_before": None,
        "enqueued_at": now(),
        # for the next claim's event; a job paused before it ever ran just starts
        "resume_reason": "after a pause" if job.started_at else None,
    }
    if not _set_status(session, job_id, [JobStatus.paused], **values):
        session.refresh(job)
        raise Conflict(
            f"job {job_id} is {job.status}; only a paused job can be resumed",
            param="fine_tuning_job_id",
            code="job_not_paused",
        )
    add_event(session, job_id, f"Resume requested; the job continues from step {job.steps_done}")
    session.commit()
    try:
        enqueue(job_id)
    except Exception:  # the reaper rings again after requeue_after_seconds
        log.exception("enqueue failed for %s", job_id)
    session.refresh(job)
    return job


def list_events(
    session: Session, project_id: str, job_id: str, *, limit: int, after: str | None
) -> tuple[list[JobEvent], bool]:
    """Newest first, as OpenAI's list_events; ``after`` is the id of the last event of the previous page."""
    get_job(session, project_id, job_id)
    q = select(JobEvent).where(JobEvent.job_id == job_id)
    if after:
        seq = session.scalar(select(JobEvent.seq).where(JobEvent.id == after, JobEvent.job_id == job_id))
        if seq is None:
            raise NotFound(f"no event {after!r} in job {job_id}", param="after")
        q = q.where(JobEvent.seq < seq)
    rows = list(session.scalars(q.order_by(JobEvent.seq.desc()).limit(limit + 1)))
    return rows[:limit], len(rows) > limit


def list_checkpoints(
    session: Session, project_id: str, job_id: str, *, limit: int, after: str | None
) -> tuple[list[Checkpoint], bool]:
    get_job(session, project_id, job_id)
    q = select(Checkpoint).where(Checkpoint.job_id == job_id)
    if after:
        step = session.scalar(select(Checkpoint.step_number).where(Checkpoint.id == after, Checkpoint.job_id == job_id))
        if step is None:
            raise NotFound(f"no checkpoint {after!r} in job {job_id}", param="after")
        q = q.where(Checkpoint.step_number < step)
    rows = list(session.scalars(q.order_by(Checkpoint.step_number.desc()).limit(limit + 1)))
    return rows[:limit], len(rows) > limit


def best_checkpoint_id(session: Session, job_id: str) -> str | None:
    """The checkpoint with the highest validation reward (the earliest on a tie); None without validation."""
    best: tuple[float, int, str] | None = None
    for cid, step, metrics in session.execute(
        select(Checkpoint.id, Checkpoint.step_number, Checkpoint.metrics).where(Checkpoint.job_id == job_id)
    ):
        value = (metrics or {}).get("valid_reward_mean")
        if isinstance(value, int | float) and (best is None or (value, -step) > (best[0], -best[1])):
            best = (float(value), step, cid)
    return best[2] if best else None


def get_checkpoint(session: Session, project_id: str, job_id: str, ckpt_id: str) -> Checkpoint:
    get_job(session, project_id, job_id)
    ckpt = session.scalar(select(Checkpoint).where(Checkpoint.id == ckpt_id, Checkpoint.job_id == job_id))
    if ckpt is None:
        raise NotFound(f"no checkpoint {ckpt_id!r} in job {job_id}", param="checkpoint_id")
    return ckpt
