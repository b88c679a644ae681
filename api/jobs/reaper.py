"""The reaper: Postgres is the truth, a Celery message is only a doorbell — this rings it again when it was lost.

One pass (``reap``) is idempotent and safe to run from several API processes at once: every change is a guarded
UPDATE, and a doorbell rung twice only makes a duplicate claim attempt that finds nothing to claim.

- running with an expired lease (the worker died with its host, or was paused/killed past its lease): re-queued
  by ringing the doorbell, once per expiry; failed with ``attempts_exhausted`` when ``max_attempts`` claims were
  used — saying so;
- cancelling / pausing with an expired lease: finished as cancelled / paused (the worker is gone; the last
  checkpoint stands);
- queued and claimable with no doorbell since ``requeue_after_seconds`` (Redis flushed, broker down at creation,
  a message lost, no worker free yet): one doorbell per pass (any worker that answers claims the best job);
- a higher-priority job unclaimed for ``preemption_grace_seconds``: a lower-priority preemptible running job is
  asked to make way (api.jobs.scheduling.preempt).
Eval runs and training-API sessions follow rules of their own beside these (api.evals.leases.reap,
api.training.leases.reap).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import Job, JobStatus, now
from api.db.session import rows_changed
from api.evals.leases import reap as reap_eval_runs
from api.jobs.events import add_event
from api.jobs.scheduling import Fleet, lock_fleet, preempt, read_fleet
from api.training.leases import reap as reap_training_sessions
from api.webhooks.service import record_job_event

log = logging.getLogger(__name__)


def _webhook(session: Session, job: Job, status: str) -> None:
    record_job_event(session, job, f"fine_tuning.job.{status}")


def reap(session: Session, queue: Doorbell, settings: ApiSettings) -> dict[str, int]:
    """One pass; returns how many jobs each rule touched (for logs and tests). It holds the fleet lock from the start,
    before any row it writes, in the order a claim takes them (the lock, then the jobs' rows), so the two never
    deadlock."""
    lock_fleet(session)
    t = now()
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
    fleet = read_fleet(session, settings, t)  # once a pass, for both rules (the rules above change no candidate)
    ring += _ring_unclaimed(session, fleet, t, stale, counts)
    counts["preemptions_asked"] = len(preempt(session, settings, fleet, t))
    eval_runs = reap_eval_runs(session, stale)
    counts["eval_runs_rung"] = len(eval_runs)
    training_sessions = reap_training_sessions(session, stale)
    counts["training_sessions_rung"] = len(training_sessions)
    session.commit()  # the doorbells ring after the commit: a worker never sees a job state older than its message
    for job_id in ring:
        try:
            queue.ring(job_id)
        except Exception:  # the broker is down: enqueued_at is set, so the next pass after requeue_after retries
            log.exception("reaper could not enqueue %s", job_id)
    for run_id in eval_runs:
        try:
            queue.ring_eval(run_id)
        except Exception:
            log.exception("reaper could not enqueue eval run %s", run_id)
    for session_id in training_sessions:
        try:
            queue.ring_session(session_id)
        except Exception:
            log.exception("reaper could not enqueue training session %s", session_id)
    return counts


def _ring_unclaimed(session: Session, fleet: Fleet, t: int, stale: int, counts: dict[str, int]) -> list[str]:
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


class Reaper:
    """``reap`` every ``reaper_interval_seconds`` in a daemon thread of the API process."""

    def __init__(self, settings: ApiSettings, sessions: sessionmaker[Session], queue: Doorbell) -> None:
        self.settings, self.sessions, self.queue = settings, sessions, queue
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="reaper", daemon=True)

    def start(self) -> Reaper:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.reaper_interval_seconds):
            try:
                with self.sessions() as session:
                    counts = reap(session, self.queue, self.settings)
                if any(counts.values()):
                    log.info("reaper: %s", counts)
            except Exception:  # the database may be restarting: try again next interval
                log.exception("reaper pass failed")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
