"""The worker side of a job (the internal API): claim, heartbeat, events, checkpoints, finish — all fenced.

A claim is one guarded UPDATE that takes a queued job, or a running one whose lease expired, while attempts
remain and past any retry backoff; it bumps the lease epoch (the fencing token) and counts the attempt. Every
later write carries the epoch and is refused with 409 ``stale_lease`` unless it is the job's current one and the
job is active, so a paused, partitioned or duplicated worker can never write. A retried request of the same
claim (``claim_id``) gets the same lease back.

The worker learns of a cancel or a pause from the answer to its per-step event post (or its heartbeat): ``stop``
is ``cancel`` or ``pause``. It then checkpoints and finishes as ``cancelled`` or ``paused``. A failure the worker
marks retryable (the object store, the network — not the job's own mistakes) re-queues the job with exponential
backoff while attempts remain.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import and_, func, null, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.core.errors import Conflict, NotFound
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import TERMINAL, Checkpoint, Job, JobStatus, RegisteredModel, ResumeReason, new_id, now
from api.db.session import rows_changed
from api.files.service import get_file
from api.jobs import scheduling
from api.jobs.events import add_event
from api.jobs.service import set_status
from api.models.service import source_of
from api.webhooks.service import record_job_event
from grpo_core.schemas.metrics import CheckpointMetrics, Execution
from runtime.internal import (
    ClaimNextRequest,
    ClaimResponse,
    EventIn,
    FinishRequest,
    FinishStatus,
    MetricsEvent,
    Refusal,
    Resources,
    ResumePoint,
    Stop,
)
from runtime.keys import CheckpointKey, checkpoints_prefix, job_prefix
from runtime.storage import ObjectStore

log = logging.getLogger(__name__)
ACTIVE = (JobStatus.running, JobStatus.cancelling, JobStatus.pausing)
STOP: dict[str, Stop] = {JobStatus.cancelling: "cancel", JobStatus.pausing: "pause"}


def stop_request(job: Job) -> Stop | None:
    """What the worker must do at the next step boundary: "cancel", "pause", "preempt" (checkpoint and hand the
    job back: a higher-priority one waits for its worker, api.jobs.scheduling) or nothing."""
    if job.status == JobStatus.running and job.preempted_by:
        return "preempt"
    return STOP.get(job.status)


def claim(
    session: Session, store: ObjectStore, settings: ApiSettings, job_id: str, worker_id: str, claim_id: str
) -> ClaimResponse:
    """Claim the job (``claim_job``) and tell the worker what to run (``claim_response``). A new attempt first
    deletes what dead attempts uploaded but never registered (they can never become part of the job)."""
    job = claim_job(session, job_id, worker_id, claim_id, settings.lease_seconds)
    _delete_orphans(session, store, job)
    return claim_response(session, settings, job)


def _delete_orphans(session: Session, store: ObjectStore, job: Job) -> None:
    if job.lease_epoch > 1:
        keys = store.list_keys(checkpoints_prefix(job_prefix(job.project_id, job.id)))
        for key in orphaned_checkpoint_keys(session, job.id, keys, job.lease_epoch):
            store.delete(key)


def claim_response(session: Session, settings: ApiSettings, job: Job) -> ClaimResponse:
    """What the current attempt runs: the spec, where its inputs are, where its objects go, the checkpoint to
    resume from and its resources. Read only: the claim and every node joining the attempt get the same one."""
    ckpt = last_checkpoint(session, job.id)
    train = get_file(session, job.project_id, job.training_file)
    valid = get_file(session, job.project_id, job.validation_file) if job.validation_file else None
    rl = job.reinforcement
    return ClaimResponse(
        job_id=job.id,
        epoch=job.lease_epoch,
        lease_expires_at=job.lease_expires_at or 0,
        lease_seconds=settings.lease_seconds,
        model=job.model,
        seed=job.seed,
        hyperparameters=rl.hyperparameters,
        grader=rl.grader,
        environment=rl.environment,
        training_file_key=train.object_key,
        validation_file_key=valid.object_key if valid else None,
        total_steps=job.total_steps,
        object_prefix=job_prefix(job.project_id, job.id),
        resume=ResumePoint(step=ckpt.step_number, adapter_key=ckpt.object_key, state_key=ckpt.state_key)
        if ckpt is not None and ckpt.state_key
        else None,
        resources=job_resources(job),
        model_source=source_of(registered) if (registered := session.get(RegisteredModel, job.model)) else None,
        integrations=job.integrations or [],
        readiness_dropped_rows=list(job.readiness.get("dropped_rows") or [])
        if job.readiness and "before" in job.readiness
        else None,
    )


def preflight_only(job: Job) -> bool:
    """Whether the job only probes readiness (POST /v1/fine_tuning/jobs/preflight): it succeeds with no model."""
    pre = job.reinforcement.hyperparameters.get("preflight") or {}
    return bool(pre.get("only"))


def job_resources(job: Job) -> Resources:
    """The job's devices and nodes; a row from before they existed (null) is one device on one node."""
    return Resources.model_validate(job.resources or {})


def claim_job(session: Session, job_id: str, worker_id: str, claim_id: str, lease_seconds: int) -> Job:
    """Take the job (see the module doc); 409 ``lease_held`` + Retry-After while another worker's lease lives
    or the retry backoff runs, 409 ``not_claimable`` when it is finished, paused or out of attempts."""
    t = now()
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id!r}", param="job_id")
    if job.status in ACTIVE and job.claim_id == claim_id:
        return heartbeat(session, job_id, job.lease_epoch, lease_seconds)
    taken = take(session, job, worker_id, claim_id, lease_seconds)
    if taken is not None:
        return taken
    session.rollback()
    session.refresh(job)
    _finish_abandoned_stop(session, job, t)
    if job.status == JobStatus.running and (job.lease_expires_at or 0) >= t:
        wait = max(1, (job.lease_expires_at or t) - t)
        raise Conflict(
            f"job {job_id} is held by another worker's lease for {wait} more s",
            code=Refusal.lease_held,
            headers={"Retry-After": str(wait)},
        )
    if job.status == JobStatus.queued and job.not_before and job.not_before > t:
        wait = job.not_before - t
        raise Conflict(f"job {job_id} retries in {wait} s", code=Refusal.lease_held, headers={"Retry-After": str(wait)})
    reason = "out of attempts" if job.attempts >= job.max_attempts else job.status
    raise Conflict(f"job {job_id} is {reason} and not claimable", code=Refusal.not_claimable)


def claim_next(
    session: Session, store: ObjectStore, queue: Doorbell, settings: ApiSettings, body: ClaimNextRequest
) -> ClaimResponse | None:
    """The next job this worker can run, chosen by the scheduler (api.jobs.scheduling) and taken by the claim's
    guarded UPDATE under the fleet lock; None when nothing is claimable for it. A retried request of the same
    claim (``claim_id``) gets the same lease back. After a claim, another doorbell rings when more jobs are
    claimable, so free workers take the queue one after another."""
    held = session.scalar(select(Job).where(Job.claim_id == body.claim_id, Job.status.in_(list(ACTIVE))))
    if held is not None:
        return claim_response(session, settings, heartbeat(session, held.id, held.lease_epoch, settings.lease_seconds))
    for job_id in scheduling.next_jobs(session, settings, body.devices, body.nodes):
        job = session.get(Job, job_id)
        if job is None:
            continue
        taken = take(session, job, body.worker_id, body.claim_id, settings.lease_seconds)
        if taken is None:  # a claim by id (a worker of the last release) took it meanwhile
            session.rollback()
            continue
        _delete_orphans(session, store, taken)
        try:
            if scheduling.ring_after_claim(session, settings):
                queue.ring(taken.id)
        except Exception:  # the reaper rings later
            log.exception("could not ring the queue after claiming %s", taken.id)
        return claim_response(session, settings, taken)
    session.commit()  # nothing to claim: release the fleet lock
    return None


def take(session: Session, job: Job, worker_id: str, claim_id: str, lease_seconds: int) -> Job | None:
    """The claim's guarded UPDATE and its event, committed; None (nothing written) when the job is not claimable:
    not queued and not running under an expired lease, out of attempts, or inside its retry backoff."""
    t = now()
    job_id = job.id
    # a running job here has an expired lease; a queued one carries why it was queued again (None: first run)
    resumed = ResumeReason.worker_lost if job.status == JobStatus.running else ResumeReason.parse(job.resume_reason)
    why = f"{resumed} at step {job.steps_done}" if resumed == ResumeReason.worker_lost else (resumed or "")
    lease_gone = or_(Job.lease_expires_at.is_(None), Job.lease_expires_at < t)
    res = rows_changed(
        session,
        update(Job)
        .where(
            Job.id == job_id,
            or_(Job.status == JobStatus.queued, and_(Job.status == JobStatus.running, lease_gone)),
            Job.attempts < Job.max_attempts,
            or_(Job.not_before.is_(None), Job.not_before <= t),
        )
        .values(
            status=JobStatus.running,
            lease_epoch=Job.lease_epoch + 1,
            lease_expires_at=t + lease_seconds,
            worker_id=worker_id,
            claim_id=claim_id,
            attempts=Job.attempts + 1,
            not_before=None,
            resume_reason=None,
            preempted_by=None,
            started_at=func.coalesce(Job.started_at, t),
            # a new attempt rendezvouses anew: the last one's endpoint and nodes belong to its dead torchrun
            rendezvous_endpoint=None,
            rendezvous_nodes=null(),  # SQL NULL (None would store JSON null)
        ),
    )
    if res != 1:
        return None
    session.refresh(job)
    ckpt = last_checkpoint(session, job_id)
    attempt = f"attempt {job.attempts} of {job.max_attempts}, worker {worker_id}"
    if ckpt is not None:
        level = "warn" if resumed == ResumeReason.worker_lost else "info"
        add_event(
            session, job_id, f"Resumed from step {ckpt.step_number} {why} ({attempt})".replace("  ", " "), level=level
        )
    elif why:
        add_event(session, job_id, f"Restarted from the beginning {why}: no checkpoint yet ({attempt})", level="warn")
    else:
        add_event(session, job_id, f"Fine-tuning job started ({attempt})")
    session.commit()
    session.refresh(job)
    return job


def _finish_abandoned_stop(session: Session, job: Job, t: int) -> None:
    """A cancelling/pausing job whose worker is gone (lease expired) becomes cancelled/paused."""
    if job.status not in (JobStatus.cancelling, JobStatus.pausing) or (job.lease_expires_at or 0) >= t:
        return
    final = JobStatus.cancelled if job.status == JobStatus.cancelling else JobStatus.paused
    gone = or_(Job.lease_expires_at.is_(None), Job.lease_expires_at < t)
    values: dict[str, Any] = {"status": final, "lease_expires_at": None}
    if final == JobStatus.cancelled:
        values["finished_at"] = t
    done = rows_changed(session, update(Job).where(Job.id == job.id, Job.status == job.status, gone).values(**values))
    if done == 1:
        add_event(session, job.id, f"Job {final} (its worker stopped before acknowledging the request)")
        if final == JobStatus.cancelled:
            record_job_event(session, job, "fine_tuning.job.cancelled")
    session.commit()
    session.refresh(job)


def last_checkpoint(session: Session, job_id: str) -> Checkpoint | None:
    """The newest checkpoint that can be resumed from (it has a training state)."""
    return session.scalar(
        select(Checkpoint)
        .where(Checkpoint.job_id == job_id, Checkpoint.state_key.is_not(None))
        .order_by(Checkpoint.step_number.desc())
        .limit(1)
    )


def fence(session: Session, job_id: str, epoch: int, lease_seconds: int) -> Job:
    """Renew the lease iff ``epoch`` is current and the job active; otherwise 409 (a stale worker)."""
    res = rows_changed(
        session,
        update(Job)
        .where(Job.id == job_id, Job.lease_epoch == epoch, Job.status.in_(list(ACTIVE)))
        .values(lease_expires_at=now() + lease_seconds),
    )
    if res != 1:
        session.rollback()
        raise Conflict(
            f"lease epoch {epoch} of job {job_id} is stale or the job is not running", code=Refusal.stale_lease
        )
    job = session.get(Job, job_id)
    assert job is not None
    session.refresh(job)
    return job


def heartbeat(session: Session, job_id: str, epoch: int, lease_seconds: int) -> Job:
    job = fence(session, job_id, epoch, lease_seconds)
    session.commit()
    return job


def record_execution(session: Session, job_id: str, epoch: int, execution: Execution, lease_seconds: int) -> Job:
    """Keep what this attempt's worker resolved its ``auto`` settings to (each attempt replaces it)."""
    job = fence(session, job_id, epoch, lease_seconds)
    job.execution = execution.model_dump(mode="json")
    session.commit()
    return job


def record_events(
    session: Session, job_id: str, epoch: int, events: list[EventIn], lease_seconds: int
) -> tuple[int, int, Stop | None]:
    """Append events; a metrics event for a step already recorded is skipped (retries never duplicate).

    Returns (events added, of which new steps, stop request): the worker posts after every step, so it learns of
    a cancel or a pause at the next step boundary without waiting for a heartbeat.
    """
    job = fence(session, job_id, epoch, lease_seconds)
    added = steps = 0
    for ev in events:
        data = ev.data.model_dump(mode="json") if isinstance(ev, MetricsEvent) else None
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
    job = fence(session, job_id, epoch, lease_seconds)
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
        metrics=metrics.model_dump(mode="json"),
    )
    session.add(ckpt)
    add_event(session, job_id, f"Checkpoint saved at step {step}/{job.total_steps}: {ckpt.id}", step=step)
    session.commit()
    return ckpt


def finish(session: Session, queue: Doorbell, settings: ApiSettings, job_id: str, body: FinishRequest) -> Job:
    """Record how the worker's run ended (``finish_job``), then ring the doorbell when a job is claimable: the one
    handed back (a worker shutting down, a preemption), or the next in line now that this worker is free (a job
    that waited at its project's limit has no doorbell of its own). If that fails the reaper rings later."""
    job, delay = finish_job(session, job_id, body, settings.lease_seconds, settings.retry_backoff_seconds)
    if delay == 0 or scheduling.ring_after_claim(session, settings):
        try:
            queue.ring(job_id)
        except Exception:
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


def orphaned_checkpoint_keys(session: Session, job_id: str, keys: list[str], current_epoch: int) -> list[str]:
    """Checkpoint objects written under an older epoch's prefix and never registered: a worker died between its
    upload and the fenced registration (the commit point). They can never become part of the job: delete them."""
    registered = set()
    for obj, state in session.execute(
        select(Checkpoint.object_key, Checkpoint.state_key).where(Checkpoint.job_id == job_id)
    ):
        registered |= {obj, state}
    parsed = ((key, CheckpointKey.parse(key)) for key in keys)
    return [key for key, ck in parsed if ck is not None and ck.epoch < current_epoch and key not in registered]
