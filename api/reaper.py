"""The reaper: Postgres is the truth, a Celery message is only a doorbell — this rings it again when it was lost.

One pass (``reap``) is idempotent and safe to run from several API processes at once: every change is a guarded
UPDATE, and a doorbell rung twice only makes a duplicate claim attempt that finds nothing to claim. The rules are
each domain's own, beside its leases; this module, above the domains, runs them in one transaction under the fleet
lock and rings the doorbells after the commit:

- jobs (api.jobs.leases.reap): a lost worker's job re-queued (or failed once its attempts are used), a stop whose
  worker is gone finished, one doorbell for the unclaimed queue, preemption;
- eval runs (api.evals.leases.reap) and training-API sessions (api.training_api.leases.reap): those whose worker
  stopped, and those no worker took.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import now
from api.evals.leases import reap as reap_eval_runs
from api.jobs.leases import reap as reap_jobs
from api.jobs.scheduling import lock_fleet
from api.training_api.leases import reap as reap_training_sessions

log = logging.getLogger(__name__)


def reap(session: Session, queue: Doorbell, settings: ApiSettings) -> dict[str, int]:
    """One pass; returns how many jobs each rule touched (for logs and tests). It holds the fleet lock from the start,
    before any row it writes, in the order a claim takes them (the lock, then the jobs' rows), so the two never
    deadlock."""
    lock_fleet(session)
    t = now()
    counts, ring = reap_jobs(session, settings, t)
    stale = t - settings.requeue_after_seconds
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
        except Exception:  # the broker is down: as for a job, the next pass rings again
            log.exception("reaper could not enqueue eval run %s", run_id)
    for session_id in training_sessions:
        try:
            queue.ring_session(session_id)
        except Exception:  # the broker is down: as for a job, the next pass rings again
            log.exception("reaper could not enqueue training session %s", session_id)
    return counts


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
