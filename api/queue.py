"""The API's side of the queue: a Celery producer that sends ``run_job`` by name (the API never imports worker).

The message is a doorbell, not the truth: the job row is committed first and the worker claims it through the
internal API, so a lost or duplicated message can delay a job but never corrupt it.
"""

from __future__ import annotations

from celery import Celery

from api.settings import ApiSettings
from runtime.queue import GPU_QUEUE, RUN_JOB


def make_producer(settings: ApiSettings) -> Celery:
    app = Celery("rft-api", broker=settings.celery_broker_url)
    app.conf.update(
        broker_transport_options=settings.broker_transport_options,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=False,
        # Fail fast when the broker is down: the job stays queued and the request still answers.
        task_publish_retry_policy={
            "max_retries": 2,
            "interval_start": 0,
            "interval_step": 0.5,
            "interval_max": 1,
        },
    )
    return app


def enqueue_run_job(app: Celery, job_id: str) -> None:
    app.send_task(RUN_JOB, args=[job_id], queue=GPU_QUEUE)
