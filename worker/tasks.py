from __future__ import annotations

from celery import Task

from api.settings import get_settings
from worker.celery_app import app
from worker.client import LeaseHeld
from worker.runner import JobRun


@app.task(name="worker.tasks.run_job", bind=True, max_retries=None)
def run_job(self: Task, job_id: str) -> None:
    """Claim ``job_id`` through the internal API and train it; every outcome is reported to the API.

    A redelivered message (its worker died) may arrive while the dead worker's lease still runs: it comes back
    when the lease has expired instead of dropping the job.
    """
    try:
        JobRun(job_id, get_settings()).run()
    except LeaseHeld as exc:
        raise self.retry(countdown=exc.retry_after + 1) from None
