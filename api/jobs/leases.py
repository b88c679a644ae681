"""The worker side of a job after its claim (api.jobs.claims): heartbeat, events, checkpoints, finish, all fenced;
and the reaper's rules for jobs (lost workers, lost doorbells, preemption: ``reap``, run by api.reaper).

Every write after the claim carries the lease epoch the claim bumped (the fencing token) and is refused with 409
``stale_lease`` unless it is the job's current one and the job is active, so a paused, partitioned or duplicated
worker can never write.

The worker learns of a cancel, a pause or a preemption from the answer to its per-step event post (or its
heartbeat): ``stop`` is ``cancel``, ``pause`` or ``preempt``. It then checkpoints and finishes as ``cancelled``,
``paused`` or ``preempted`` (handed back to the queue). A failure the worker marks retryable (the object store, the
network — not the job's own mistakes) re-queues the job with exponential backoff while attempts remain.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.checkpoints import service as checkpoints
from api.core.errors import Conflict
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import ACTIVE, TERMINAL, Checkpoint, Job, JobStatus, ResumeReason, now
from api.db.session import rows_changed
from api.jobs import budget, scheduling
from api.jobs.events import add_event
from api.jobs.schemas import COST
from api.jobs.service import set_status
from api.usage import metering
from api.webhooks.service import record_job_event
from grpo_core.schemas.metrics import CheckpointMetrics, Execution
from runtime.internal import (
    EventIn,
    FinishRequest,
    FinishStatus,
    MetricsEvent,
    Refusal,
    Stop,
)

log = logging.getLogger(__name__)
STOP: dict[str, Stop] = {JobStatus.cancelling: "cancel", JobStatus.pausing: "pause"}


def stop_request(job: Job) -> Stop | None:
    """What the worker must do at the next step boundary: "cancel", "pause", "preempt" (checkpoint and hand the
    job back: a higher-priority one waits for its worker, api.jobs.scheduling) or nothing."""
    if job.status == JobStatus.running and job.preempted_by:
        return "preempt"
    return STOP.get(job.status)


def preflight_only(job: Job) -> bool:
    """Whether the job only probes readiness (POST /v1/fine_tuning/jobs/preflight): it succeeds with no model."""
    pre = job.reinforcement.hyperparameters.get("preflight") or {}
    return bool(pre.get("only"))


def fence(session: Session, job_id: str, epoch: int, lease_seconds: int) -> Job:
    """Renew the lease iff ``epoch`` is current and the job active; otherwise 409 (a stale worker). Every fenced
    contact also meters the attempt's device-seconds up to now (api.usage.metering)."""
    t = now()
    res = rows_changed(
        session,
        update(Job)
        .where(Job.id == job_id, Job.lease_epoch == epoch, Job.status.in_(list(ACTIVE)))
        .values(lease_expires_at=t + lease_seconds),
    )
    if res != 1:
        session.rollback()
        raise Conflict(
            f"lease epoch {epoch} of job {job_id} is stale or the job is not running", code=Refusal.stale_lease
        )
    job = session.get(Job, job_id)
    assert job is not None
    session.refresh(job)
    metering.contact_job(session, job)
    return job


def heartbeat(session: Session, job_id: str, epoch: int, lease_seconds: int) -> Job:
    job = fence(session, job_id, epoch, lease_seconds)
    session.commit()
    return job


def record_execution(session: Session, job_id: str, epoch: int, execution: Execution, lease_seconds: int) -> Job:
    """Keep what this attempt's worker resolved its ``auto`` settings to (each attempt replaces it)."""
    job = fence(session, job_id, epoch, lease_seconds)
    job.execution = execution.model_dump(mode="json")
    metering.record_device(session, job_id, epoch, execution)
    session.commit()
    return job


def record_events(
    session: Session, settings: ApiSettings, job_id: str, epoch: int, events: list[EventIn]
) -> tuple[int, int, Stop | None]:
    """Append events; a metrics event for a step already recorded is skipped (retries never duplicate). The steps
    are metered first (api.usage.metering, per attempt, recorded or not: a resumed attempt re-running a step did
    that work again), so each metrics event keeps the job's running cost, and the job's budget is checked
    (api.jobs.budget: a warning, or a pause at the cap).

    Returns (events added, of which new steps, stop request): the worker posts after every step, so it learns of
    a cancel, a pause or its budget's cap at the next step boundary without waiting for a heartbeat.
    """
    job = fence(session, job_id, epoch, settings.lease_seconds)
    metrics = [ev for ev in events if isinstance(ev, MetricsEvent)]
    cost: dict[str, Any] | None = None
    if metrics:
        metering.count_steps(session, job, metrics)
        cost = budget.after_steps(session, settings, job, max(ev.step for ev in metrics)).model_dump(mode="json")
        session.refresh(job)  # the cap may have turned it to pausing
    added = steps = 0
    for ev in events:
        data = ev.data.model_dump(mode="json") | {COST: cost} if isinstance(ev, MetricsEvent) else None
        try:
            with session.begin_nested():
                add_event(session, job_id, ev.message, level=ev.level, type_=ev.type, step=ev.step, data=data)
            added += 1
        except IntegrityError:
            continue
        if isinstance(ev, MetricsEvent):
            steps += 1
            session.execute(update(Job).where(Job.id == job_id, Job.steps_done < ev.step).values(steps_done=ev.step))
    session.commit()
    return added, steps, stop_request(job)


def register_checkpoint(
    session: Session,
    job_id: str,
    epoch: int,
    step: int,
    object_key: str,
    state_key: str | None,
    metrics: CheckpointMetrics,
    lease_seconds: int,
) -> Checkpoint:
    """Fenced: the checkpoint's row (api.checkpoints.service, the commit point) and its event, once per step."""
    job = fence(session, job_id, epoch, lease_seconds)
    ckpt, added = checkpoints.register_job_checkpoint(
        session, job_id, step, object_key, state_key, metrics.model_dump(mode="json")
    )
    if added:
        add_event(session, job_id, f"Checkpoint saved at step {step}/{job.total_steps}: {ckpt.id}", step=step)
    session.commit()
    return ckpt


def finish(session: Session, queue: Doorbell, settings: ApiSettings, job_id: str, body: FinishRequest) -> Job:
    """Record how the worker's run ended (``finish_job``), then ring the doorbell when a job is claimable: the one
    handed back (a worker shutting down, a preemption), or the next in line now that this worker is free (a job
    that waited at its project's limit has no doorbell of its own). If that fails the reaper rings later."""
    job, delay = finish_job(session, job_id, body, settings.lease_seconds, settings.retry_backoff_seconds)
    scheduling.forget(session)  # a place freed, a share grown: the next poll reads the fleet again
    if delay == 0 or scheduling.any_claimable(session):
        try:
            queue.ring(job_id)
        except Exception:  # the broker is down (any client error): the reaper rings again later
            log.exception("could not enqueue %s after its worker shut down; the reaper will", job_id)
    return job


def retry_delay(attempts: int, base_seconds: int) -> int:
    """Exponential backoff before attempt ``attempts + 1``: base, 2×base, 4×base, … capped at one hour."""
    return min(3600, base_seconds * 2 ** max(0, attempts - 1))


def finish_job(
    session: Session, job_id: str, body: FinishRequest, lease_seconds: int, retry_base_seconds: int
) -> tuple[Job, int | None]:
    """Record how the worker's run ended; returns (job, seconds until a retry). A retryable failure with
    attempts left goes back to queued with a backoff; the reaper rings the doorbell once it has passed."""
    job = fence(session, job_id, body.epoch, lease_seconds)
    status: str = body.status
    error_code, error_message, retryable = body.error_code, body.error_message, body.retryable
    if status == FinishStatus.preempted:
        if job.status == JobStatus.running and _hand_back(session, job):
            return job, 0
        # a cancel or pause arrived while the worker was shutting down (read above, or committed since): the
        # checkpoint it saved serves that request
        session.refresh(job)
        status = JobStatus.cancelled if job.status == JobStatus.cancelling else JobStatus.paused
    if status == JobStatus.failed and retryable and job.status in STOP:
        # the user asked this job to stop: a failure on its way out (a multi-process job's ranks killed by the stop
        # grace, the store unreachable) ends it as asked, never as a retry that would train on
        status = JobStatus.cancelled if job.status == JobStatus.cancelling else JobStatus.paused
    if status == JobStatus.failed and retryable and job.attempts < job.max_attempts:
        delay = retry_delay(job.attempts, retry_base_seconds)
        # enqueued_at None: the reaper rings the doorbell as soon as not_before has passed
        values: dict[str, Any] = {
            "status": JobStatus.queued,
            "lease_expires_at": None,
            "not_before": now() + delay,
            "enqueued_at": None,
            "queued_at": now(),
            "resume_reason": ResumeReason.failed_attempt,
        }
        if not set_status(session, job_id, ACTIVE, **values):
            raise Conflict(f"job {job_id} is already {job.status}", code=Refusal.already_finished)
        add_event(
            session,
            job_id,
            f"Attempt {job.attempts} of {job.max_attempts} failed ({error_message}); retrying in {delay} s "
            "from the last checkpoint",
            level="warn",
        )
        session.commit()
        session.refresh(job)
        return job, delay
    values = {"lease_expires_at": None}
    if status == JobStatus.paused:
        values["status"] = JobStatus.paused
        message = f"Job paused at step {job.steps_done}/{job.total_steps}"
    else:
        values |= {"status": status, "finished_at": now()}
        if status == JobStatus.succeeded and preflight_only(job):
            if not (job.readiness or {}).get("before"):
                raise Conflict(
                    "a readiness-only job cannot succeed without its report", code=Refusal.no_readiness_report
                )
            message = "The readiness report is ready (GET /v1/fine_tuning/jobs/{id}/readiness); nothing was trained"
        elif status == JobStatus.succeeded:
            has_ckpt = session.scalar(select(func.count()).select_from(Checkpoint).where(Checkpoint.job_id == job_id))
            if not has_ckpt:
                raise Conflict("a job cannot succeed without a registered checkpoint", code=Refusal.no_checkpoint)
            values["fine_tuned_model"] = f"ft:{job.model}:{job.suffix or 'rft'}:{job.id}"
            message = "The job has successfully completed"
        elif status == JobStatus.failed:
            values["error"] = {"code": error_code or "training_error", "message": error_message or "unknown error"}
            if retryable:
                values["error"]["message"] += f" (after {job.attempts} attempts)"
            message = f"Job failed: {values['error']['message']}"
        else:
            message = "Job cancelled"
    if body.trained_tokens is not None:
        values["trained_tokens"] = body.trained_tokens
    if not set_status(session, job_id, ACTIVE, **values):
        raise Conflict(f"job {job_id} is already {job.status}", code=Refusal.already_finished)
    if status in TERMINAL:
        record_job_event(session, job, f"fine_tuning.job.{status}")
    add_event(session, job_id, message, level="error" if status == JobStatus.failed else "info")
    session.commit()
    session.refresh(job)
    return job, None


def _hand_back(session: Session, job: Job) -> bool:
    """A worker shutting down (a deploy, a scale-in, a drained node, a spot reclaim) or preempted for a
    higher-priority job stopped at a step boundary and registered its checkpoint: the job is queued again at once,
    and the claim it used is given back, so a job can outlive any number of worker restarts and preemptions. The
    caller rings the doorbell after the commit."""
    t = now()
    preempted_by = job.preempted_by  # read before the UPDATE below clears it
    preempted = preempted_by is not None
    values: dict[str, Any] = {
        "status": JobStatus.queued,
        "lease_expires_at": None,
        "not_before": None,
        "enqueued_at": t,
        "queued_at": t,
        "attempts": Job.attempts - 1,
        "resume_reason": ResumeReason.preempted if preempted else ResumeReason.worker_shut_down,
        "preempted_by": None,
    }
    if not set_status(session, job.id, [JobStatus.running], **values):
        session.rollback()
        return False
    at = f"at step {job.steps_done}/{job.total_steps}"
    if preempted:
        message = (
            f"Preempted for {preempted_by}: back in the queue {at}, to resume from its checkpoint on the next free "
            "worker (this does not count as an attempt)"
        )
    else:
        message = (
            f"Its worker is shutting down: back in the queue {at}, to resume from its checkpoint on the next free "
            "worker (this does not count as an attempt)"
        )
    add_event(session, job.id, message, level="warn")
    session.commit()
    session.refresh(job)
    return True


def reap(session: Session, settings: ApiSettings, t: int) -> tuple[dict[str, int], list[str]]:
    """The reaper's rules for jobs (api.reaper), each change a guarded UPDATE. The caller holds the fleet lock
    (scheduling.lock_fleet) from before this reads anything, commits, then rings the jobs returned:

    - running with an expired lease (the worker died with its host, or was paused/killed past its lease): re-queued
      by ringing the doorbell, once per expiry; failed with ``attempts_exhausted`` when ``max_attempts`` claims were
      used — saying so;
    - cancelling / pausing with an expired lease: finished as cancelled / paused (the worker is gone; the last
      checkpoint stands);
    - queued and claimable with no doorbell since ``requeue_after_seconds`` (Redis flushed, broker down at creation,
      a message lost, no worker free yet): one doorbell per pass (any worker that answers claims the best job);
    - a higher-priority job unclaimed for ``preemption_grace_seconds``: a lower-priority preemptible running job is
      asked to make way (api.jobs.scheduling.preempt).

    Returns how many jobs each rule touched (for logs and tests) and the jobs to ring."""
    counts = {"requeued_lost_worker": 0, "failed_exhausted": 0, "finished_stopping": 0, "requeued_queued": 0}
    expired = select(Job).where(
        Job.status.in_([JobStatus.running, JobStatus.cancelling, JobStatus.pausing]),
        Job.lease_expires_at.is_not(None),
        Job.lease_expires_at < t,
    )
    ring: list[str] = []
    for job in session.scalars(expired).all():
        guard = and_(Job.id == job.id, Job.status == job.status, Job.lease_expires_at == job.lease_expires_at)
        if job.status in (JobStatus.cancelling, JobStatus.pausing):
            final = JobStatus.cancelled if job.status == JobStatus.cancelling else JobStatus.paused
            values: dict[str, Any] = {"status": final, "lease_expires_at": None}
            if final == JobStatus.cancelled:
                values["finished_at"] = t
            if rows_changed(session, update(Job).where(guard).values(**values)) == 1:
                add_event(session, job.id, f"Job {final} (its worker stopped before acknowledging the request)")
                if final == JobStatus.cancelled:
                    _webhook(session, job, final)
                counts["finished_stopping"] += 1
        elif job.attempts >= job.max_attempts:
            error = {
                "code": "attempts_exhausted",
                "message": f"the worker was lost {job.attempts} times (max_attempts={job.max_attempts}); "
                f"last at step {job.steps_done}/{job.total_steps}",
            }
            failed = {"status": JobStatus.failed, "finished_at": t, "lease_expires_at": None, "error": error}
            if rows_changed(session, update(Job).where(guard).values(**failed)) == 1:
                add_event(session, job.id, f"Job failed: {error['message']}", level="error")
                _webhook(session, job, JobStatus.failed)
                counts["failed_exhausted"] += 1
        elif job.enqueued_at is None or job.enqueued_at < (job.lease_expires_at or t):  # once per expiry
            _requeue_lost(session, job, guard, t, counts, ring)
    stale = t - settings.requeue_after_seconds
    # the fleet is read once a pass, for both rules below (the rules above change no candidate)
    fleet = scheduling.read_fleet(session, settings, t)
    ring += _ring_unclaimed(session, fleet, t, stale, counts)
    counts["preemptions_asked"] = len(scheduling.preempt(session, settings, fleet, t))
    return counts, ring


def _webhook(session: Session, job: Job, status: str) -> None:
    record_job_event(session, job, f"fine_tuning.job.{status}")


def _ring_unclaimed(session: Session, fleet: scheduling.Fleet, t: int, stale: int, counts: dict[str, int]) -> list[str]:
    """Claimable queued jobs whose doorbell is older than ``requeue_after_seconds`` (Redis flushed, the broker down
    at creation, a message lost, or simply no worker free yet): one doorbell per pass, since any worker that
    answers claims the best job (api.jobs.scheduling). Each is marked rung; the event goes to the job next in line
    only, so jobs waiting their turn behind others do not repeat it every pass. Jobs held back by their project's
    limit or a backoff are rung when that ends, not here."""
    order = fleet.order(t)
    due = [c.id for c in order if c.queued]
    if not due:
        return []
    lost = select(Job.id).where(
        Job.id.in_(due), Job.status == JobStatus.queued, or_(Job.enqueued_at.is_(None), Job.enqueued_at < stale)
    )
    lost_ids = set(session.scalars(lost))
    rung = [job_id for job_id in due if job_id in lost_ids]
    if not rung:
        return []
    unrung = or_(Job.enqueued_at.is_(None), Job.enqueued_at < stale)
    session.execute(update(Job).where(Job.id.in_(rung), Job.status == JobStatus.queued, unrung).values(enqueued_at=t))
    if rung[0] == due[0]:
        add_event(session, rung[0], "Not claimed yet; ringing the queue again (its message may have been lost)")
    counts["requeued_queued"] += len(rung)
    return rung[:1]


def _requeue_lost(session: Session, job: Job, guard: Any, t: int, counts: dict[str, int], ring: list[str]) -> None:
    """Mark the doorbell rung (the claim takes a running job whose lease expired) and say so in the events."""
    if rows_changed(session, update(Job).where(guard).values(enqueued_at=t)) != 1:
        return
    add_event(
        session,
        job.id,
        f"Worker lost at step {job.steps_done} (lease expired); re-queued for attempt "
        f"{job.attempts + 1} of {job.max_attempts}",
        level="warn",
    )
    ring.append(job.id)
    counts["requeued_lost_worker"] += 1
