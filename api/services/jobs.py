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
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.db.models import TERMINAL, Checkpoint, Job, JobEvent, JobStatus, new_id, now
from api.errors import Conflict, InvalidRequest, NotFound, Unprocessable
from api.schemas.internal import EventIn
from api.schemas.jobs import JobCreate
from api.services.files import get_file
from grpo_core.config import apply_caps
from grpo_core.models import list_models
from grpo_core.rewards.schemas import reward_columns

log = logging.getLogger(__name__)
HP = "method.reinforcement.hyperparameters"
ACTIVE = (JobStatus.running, JobStatus.cancelling)


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
) -> Job:
    """Validate everything a worker would trip over, store the job ``queued``, then enqueue it (after commit)."""
    if body.model not in list_models(models_dir):
        known = ", ".join(list_models(models_dir)) or "none installed"
        raise InvalidRequest(
            f"unknown model {body.model!r} (available: {known})", param="model", code="model_not_found"
        )
    train = get_file(session, project_id, body.training_file, param="training_file")
    if body.validation_file is not None:
        get_file(session, project_id, body.validation_file, param="validation_file")
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
    )
    session.add(job)
    session.flush()
    add_event(session, job.id, f"Created fine-tuning job: {job.id}")
    add_event(session, job.id, f"Validated training file: {train.row_count} rows; {job.total_steps} steps planned")
    for message in capped:
        add_event(session, job.id, message, level="warn")
    session.commit()
    # Queue after commit: a worker can never receive an id whose row it cannot see yet. If the broker is
    # down the job stays queued (and says so); re-enqueueing it is the reconciler's job.
    try:
        enqueue(job.id)
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


def list_jobs(session: Session, project_id: str, *, limit: int, after: str | None) -> tuple[list[Job], bool]:
    q = select(Job).where(Job.project_id == project_id)
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
    """queued -> cancelled at once; running -> cancelling (the worker stops at the next step boundary)."""
    job = get_job(session, project_id, job_id)
    if _set_status(session, job_id, [JobStatus.queued], status=JobStatus.cancelled, finished_at=now()):
        add_event(session, job_id, "Job cancelled before it started")
    elif _set_status(session, job_id, [JobStatus.running], status=JobStatus.cancelling):
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


# ---- worker side (internal API) -------------------------------------------------------------------------


def claim_job(session: Session, job_id: str, worker_id: str, claim_id: str, lease_seconds: int) -> Job:
    """Take the job: queued, or running with an expired lease. Bumps the epoch (the fencing token).

    The same ``claim_id`` retrying (its first answer was lost) gets the same lease back. A running job whose
    lease is alive answers 409 ``lease_held`` with Retry-After, so a redelivered message waits for the lease to
    run out instead of dropping the job; a ``cancelling`` job whose worker is gone is finished as cancelled.
    """
    t = now()
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id!r}", param="job_id")
    if job.status == JobStatus.running and job.claim_id == claim_id:
        return heartbeat(session, job_id, job.lease_epoch, lease_seconds)
    lease_gone = or_(Job.lease_expires_at.is_(None), Job.lease_expires_at < t)
    res = session.execute(
        update(Job)
        .where(Job.id == job_id, or_(Job.status == JobStatus.queued, and_(Job.status == JobStatus.running, lease_gone)))
        .values(
            status=JobStatus.running,
            lease_epoch=Job.lease_epoch + 1,
            lease_expires_at=t + lease_seconds,
            worker_id=worker_id,
            claim_id=claim_id,
            started_at=func.coalesce(Job.started_at, t),
        )
    )
    if res.rowcount != 1:
        session.rollback()
        session.refresh(job)
        if job.status == JobStatus.cancelling and (job.lease_expires_at or 0) < t:
            gone = (Job.lease_expires_at.is_(None)) | (Job.lease_expires_at < t)
            done = session.execute(
                update(Job)
                .where(Job.id == job_id, Job.status == JobStatus.cancelling, gone)
                .values(status=JobStatus.cancelled, finished_at=t, lease_expires_at=None)
            )
            if done.rowcount == 1:
                add_event(session, job_id, "Job cancelled (its worker stopped before acknowledging the cancel)")
            session.commit()
            session.refresh(job)
        if job.status == JobStatus.running:
            wait = max(1, (job.lease_expires_at or t) - t)
            raise Conflict(
                f"job {job_id} is held by another worker's lease for {wait} more s",
                code="lease_held",
                headers={"Retry-After": str(wait)},
            )
        raise Conflict(f"job {job_id} is {job.status} and not claimable", code="not_claimable")
    session.refresh(job)
    if job.steps_done:
        add_event(
            session,
            job_id,
            f"Worker lost at step {job.steps_done}; restarting on {worker_id} "
            f"(attempt {job.lease_epoch}) from the last checkpoint",
            level="warn",
        )
    else:
        add_event(session, job_id, f"Fine-tuning job started (attempt {job.lease_epoch}, worker {worker_id})")
    session.commit()
    session.refresh(job)
    return job


def last_checkpoint(session: Session, job_id: str) -> Checkpoint | None:
    """The newest checkpoint that can be resumed from (it has a training state)."""
    return session.scalar(
        select(Checkpoint)
        .where(Checkpoint.job_id == job_id, Checkpoint.state_key.is_not(None))
        .order_by(Checkpoint.step_number.desc())
        .limit(1)
    )


def _fence(session: Session, job_id: str, epoch: int, lease_seconds: int) -> Job:
    """Renew the lease iff ``epoch`` is current and the job active; otherwise 409 (a stale worker)."""
    res = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_epoch == epoch, Job.status.in_(list(ACTIVE)))
        .values(lease_expires_at=now() + lease_seconds)
    )
    if res.rowcount != 1:
        session.rollback()
        raise Conflict(f"lease epoch {epoch} of job {job_id} is stale or the job is not running", code="stale_lease")
    job = session.get(Job, job_id)
    assert job is not None
    session.refresh(job)
    return job


def heartbeat(session: Session, job_id: str, epoch: int, lease_seconds: int) -> Job:
    job = _fence(session, job_id, epoch, lease_seconds)
    session.commit()
    return job


def record_events(
    session: Session, job_id: str, epoch: int, events: list[EventIn], lease_seconds: int
) -> tuple[int, bool]:
    """Append events; a metrics event for a step already recorded is skipped (retries never duplicate).

    Returns (events added, cancel requested): the worker posts after every step, so it learns of a cancel at
    the next step boundary without waiting for a heartbeat.
    """
    job = _fence(session, job_id, epoch, lease_seconds)
    added = 0
    for ev in events:
        if ev.type == "metrics" and ev.step is None:
            raise InvalidRequest("a metrics event needs a step", param="events.step")
        try:
            with session.begin_nested():
                add_event(session, job_id, ev.message, level=ev.level, type_=ev.type, step=ev.step, data=ev.data)
            added += 1
        except IntegrityError:
            continue
        if ev.type == "metrics":
            session.execute(update(Job).where(Job.id == job_id, Job.steps_done < ev.step).values(steps_done=ev.step))
    session.commit()
    return added, job.status == JobStatus.cancelling


def register_checkpoint(
    session: Session,
    job_id: str,
    epoch: int,
    step: int,
    object_key: str,
    state_key: str | None,
    metrics: dict[str, Any],
    lease_seconds: int,
) -> Checkpoint:
    job = _fence(session, job_id, epoch, lease_seconds)
    existing = session.scalar(select(Checkpoint).where(Checkpoint.job_id == job_id, Checkpoint.step_number == step))
    # A retried registration, or a resumed attempt re-reaching a step: resume is exact (same data, RNG and
    # optimizer state), so the first registration stands and the step is not counted twice.
    if existing is not None:
        session.commit()
        return existing
    ckpt = Checkpoint(
        id=new_id("ftckpt"),
        job_id=job_id,
        step_number=step,
        object_key=object_key,
        state_key=state_key,
        metrics=metrics,
    )
    session.add(ckpt)
    add_event(session, job_id, f"Checkpoint saved at step {step}/{job.total_steps}: {ckpt.id}", step=step)
    session.commit()
    return ckpt


def finish_job(
    session: Session,
    job_id: str,
    epoch: int,
    status: str,
    *,
    error_code: str | None,
    error_message: str | None,
    trained_tokens: int | None,
    lease_seconds: int,
) -> Job:
    job = _fence(session, job_id, epoch, lease_seconds)
    values: dict[str, Any] = {"status": status, "finished_at": now(), "lease_expires_at": None}
    if status == JobStatus.succeeded:
        has_ckpt = session.scalar(select(func.count()).select_from(Checkpoint).where(Checkpoint.job_id == job_id))
        if not has_ckpt:
            raise Conflict("a job cannot succeed without a registered checkpoint", code="no_checkpoint")
        values["fine_tuned_model"] = f"ft:{job.model}:{job.suffix or 'rft'}:{job.id}"
        message = "The job has successfully completed"
    elif status == JobStatus.failed:
        values["error"] = {
            "code": error_code or "training_error",
            "message": error_message or "unknown error",
        }
        message = f"Job failed: {values['error']['message']}"
    else:
        message = "Job cancelled"
    if trained_tokens is not None:
        values["trained_tokens"] = trained_tokens
    if not _set_status(session, job_id, ACTIVE, **values):
        raise Conflict(f"job {job_id} is already {job.status}", code="already_finished")
    add_event(session, job_id, message, level="error" if status == JobStatus.failed else "info")
    session.commit()
    session.refresh(job)
    assert job.status in TERMINAL
    return job
