"""How a worker gets a job: the claim (api.jobs.leases holds every fenced write after it).

A claim is one guarded UPDATE (``take``) that takes a queued job, or a running one whose lease expired, while
attempts remain and past any retry backoff; it bumps the lease epoch (the fencing token) and counts the attempt.
A worker asks for the next job it can run (``claim_next``: the scheduler, api.jobs.scheduling, picks it); a worker
of an older release claims the job its message named (``claim``). A retried request of the same claim
(``claim_id``) gets the same lease back. A new attempt first deletes what dead attempts uploaded but never
registered (they can never become part of the job).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, null, or_, select, update
from sqlalchemy.orm import Session

from api.core.errors import Conflict, NotFound
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import ACTIVE, Checkpoint, Job, JobStatus, RegisteredModel, ResumeReason, now
from api.db.session import rows_changed
from api.files.service import get_file
from api.jobs import scheduling
from api.jobs.events import add_event
from api.jobs.leases import heartbeat
from api.models.service import source_of
from api.secrets import service as project_secrets
from api.usage import metering
from api.webhooks.service import record_job_event
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.pooling import pool_key, pool_problem
from runtime.internal import ClaimNextRequest, ClaimResponse, Refusal, Resources, ResumePoint
from runtime.keys import CheckpointKey, checkpoints_prefix, job_prefix
from runtime.storage import ObjectStore

log = logging.getLogger(__name__)


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


def claim_response(session: Session, settings: ApiSettings, job: Job, *, with_secrets: bool = True) -> ClaimResponse:
    """What the current attempt runs: the spec, where its inputs are, where its objects go, the checkpoint to
    resume from and its resources. Read only: the claim and every node joining the attempt get the same one, but
    for the decrypted secrets its integrations name, which only the claiming node (rank 0's) gets: a join passes
    ``with_secrets=False``."""
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
        secrets=project_secrets.for_job(session, settings, job) if with_secrets else {},
        readiness_dropped_rows=list(job.readiness.get("dropped_rows") or [])
        if job.readiness and "before" in job.readiness
        else None,
    )


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
    tried: set[str] = set()
    while True:
        scheduling.lock_fleet(session)  # again after a rollback, which released it
        # under the lock: a retry of a request that timed out while waiting for it sees the lease that one took,
        # before the fleet is read for a decision it does not need
        held = session.scalar(select(Job).where(Job.claim_id == body.claim_id, Job.status.in_(list(ACTIVE))))
        if held is not None:
            beat = heartbeat(session, held.id, held.lease_epoch, settings.lease_seconds)
            return claim_response(session, settings, beat)
        order = scheduling.next_jobs(session, settings, body.devices, body.nodes)
        job = next(
            (
                j
                for j_id in order
                if j_id not in tried
                and (j := session.get(Job, j_id)) is not None
                and (body.pool is None or pool_key_of(j) == body.pool)
            ),
            None,
        )
        if job is None:
            break
        tried.add(job.id)
        taken = take(session, job, body.worker_id, body.claim_id, settings.lease_seconds)
        if taken is None:  # a cancel, or a claim by id (a worker of the last release), came first: decide again
            session.rollback()
            continue
        _delete_orphans(session, store, taken)
        try:
            if scheduling.any_claimable(session):
                queue.ring(taken.id)
        except Exception:  # the reaper rings later
            log.exception("could not ring the queue after claiming %s", taken.id)
        return claim_response(session, settings, taken)
    session.commit()  # nothing to claim: release the fleet lock
    return None


def pool_key_of(job: Job) -> str | None:
    """The key of the pool ``job`` may join (grpo_core.schemas.pooling), or None when it takes a worker of its own
    (also a row this release's config no longer reads: a worker alone fails it with the reason)."""
    try:
        cfg = GRPOConfig.model_validate(job.reinforcement.hyperparameters)
    except ValidationError:
        return None
    res = job_resources(job)
    if pool_problem(cfg, res.devices, res.nodes, res.rollout_devices) is not None:
        return None
    return pool_key(job.model, cfg)


def take(session: Session, job: Job, worker_id: str, claim_id: str, lease_seconds: int) -> Job | None:
    """The claim's guarded UPDATE and its event, committed; None (nothing written) when the job is not claimable:
    not queued and not running under an expired lease, out of attempts, or inside its retry backoff."""
    t = now()
    job_id = job.id
    # a running job here has an expired lease; a queued one carries why it was queued again (None: first run)
    resumed = ResumeReason.worker_lost if job.status == JobStatus.running else ResumeReason.parse(job.resume_reason)
    why = f"{resumed} at step {job.steps_done}" if resumed == ResumeReason.worker_lost else (resumed or "")
    res = rows_changed(
        session,
        update(Job)
        .where(Job.id == job_id, scheduling.claimable(t))
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
    metering.start_attempt(session, job, worker_id)
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
    scheduling.forget(session)  # the places in line this process showed are gone
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
