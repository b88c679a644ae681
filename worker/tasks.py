from __future__ import annotations

from api.settings import get_settings
from worker.celery_app import app
from worker.runner import JobRun


@app.task(name="worker.tasks.run_job")
def run_job(job_id: str) -> None:
    """Claim ``job_id`` through the internal API and train it; every outcome is reported to the API."""
    JobRun(job_id, get_settings()).run()
