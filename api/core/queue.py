"""The API's side of the job queue: one ``JobQueue`` per process (``app.state.queue``) rings the worker's doorbell.

The message is a doorbell, not the truth: the job row is committed first and the worker claims it through the
internal API, so a lost or duplicated message can delay a job but never corrupt it. Services take a ``Doorbell``
(anything with ``ring``, ``join``, ``ring_eval``, ``ring_session``, ``serve`` and ``wake``), so a test can record
the rings instead of sending them.
"""

from __future__ import annotations

from typing import Protocol

from celery import Celery

from api.core.wakeups import Wakeups
from runtime.queue import GPU_QUEUE, JOIN_JOB, RUN_EVAL, RUN_JOB, RUN_SESSION, SERVE_MODEL
from runtime.settings import CommonSettings


class Doorbell(Protocol):
    def ring(self, job_id: str) -> None:
        """Tell a worker that ``job_id`` may be claimable; raises when the broker cannot be reached."""
        ...

    def join(self, job_id: str, epoch: int) -> None:
        """Ask a worker to join attempt ``epoch`` of multi-node job ``job_id`` as another node; raises when the
        broker cannot be reached."""
        ...

    def ring_eval(self, run_id: str) -> None:
        """Tell a worker that eval run ``run_id`` is queued; raises when the broker cannot be reached."""
        ...

    def ring_session(self, session_id: str) -> None:
        """Tell a worker that training session ``session_id`` has work and no worker; raises when the broker
        cannot be reached."""
        ...

    def serve(self, replica_id: str) -> None:
        """Ask a worker with room to start inference replica ``replica_id`` (api.inference.replicas); raises when
        the broker cannot be reached."""
        ...

    def wake(self, key: str) -> None:
        """Wake this process's long polls waiting on ``key`` (api.core.wakeups): no broker, never raises."""
        ...


class JobQueue:
    """A Celery producer that sends ``run_job`` by name (the API never imports the worker's code)."""

    def __init__(self, settings: CommonSettings) -> None:
        self.wakeups = Wakeups()  # this process's long polls (the training API's futures and workers)
        self.app = Celery("rft-api", broker=settings.celery_broker_url)
        self.app.conf.update(
            broker_transport_options=settings.broker_transport_options,
            task_serializer="json",
            accept_content=["json"],
            broker_connection_retry_on_startup=False,
            # Fail fast when the broker is down: the job stays queued and the request still answers.
            task_publish_retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1},
        )

    def ring(self, job_id: str) -> None:
        self.app.send_task(RUN_JOB, args=[job_id], queue=GPU_QUEUE)

    def join(self, job_id: str, epoch: int) -> None:
        self.app.send_task(JOIN_JOB, args=[job_id, epoch], queue=GPU_QUEUE)

    def ring_eval(self, run_id: str) -> None:
        self.app.send_task(RUN_EVAL, args=[run_id], queue=GPU_QUEUE)

    def ring_session(self, session_id: str) -> None:
        self.app.send_task(RUN_SESSION, args=[session_id], queue=GPU_QUEUE)

    def serve(self, replica_id: str) -> None:
        self.app.send_task(SERVE_MODEL, args=[replica_id], queue=GPU_QUEUE)

    def wake(self, key: str) -> None:
        self.wakeups.notify(key)

    def ping(self) -> None:
        """Reach the broker once (readiness); raises when it cannot be reached within a few seconds."""
        with self.app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
