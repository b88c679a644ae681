"""The worker's Celery app (worker.settings: the shared settings plus the worker's own; no database).

acks_late + reject_on_worker_lost: a worker killed mid-job leaves its message to be redelivered, and prefetch 1
keeps one GPU job per process. The redelivered copy can only claim the job once the lease has expired, so a
duplicate delivery finds nothing to claim and exits quietly.

Shutdown (SIGTERM: ``docker stop``, a pod's termination, a scale-in): Celery's warm shutdown waits for the running
task; we tell the pool processes (SIGUSR2), whose running job then stops at the next step boundary, checkpoints
and is handed back to the queue (worker.runner.stop_for_shutdown), so the wait is one step, not the whole job.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init, worker_shutting_down

from runtime.queue import GPU_QUEUE
from worker.settings import get_settings

settings = get_settings()

app = Celery("rft-worker", broker=settings.celery_broker_url, include=["worker.tasks"])
app.conf.update(
    broker_transport_options={
        **settings.broker_transport_options,
        # Redis: how long an unacked message waits before redelivery. The lease makes a redelivery harmless.
        **({"visibility_timeout": 4 * 3600} if settings.broker_url else {}),
    },
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue=GPU_QUEUE,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    # The operator's budget per attempt: the soft limit ends the run with a clear error (time_limit); the hard
    # one, 10 min later, replaces a process stuck past it (the lease then expires and the reaper takes over).
    task_soft_time_limit=settings.job_time_limit_seconds,
    task_time_limit=settings.job_time_limit_seconds + 600 if settings.job_time_limit_seconds else None,
    worker_cancel_long_running_tasks_on_connection_loss=True,
)


@worker_init.connect
def _preload_training_stack(**_: Any) -> None:
    """Import torch and grpo_core's training stack once, before the pool forks: every job's process inherits them
    instead of importing them when its first job arrives (seconds of a user's submit -> first step;
    bench/api_load.py measures it). grpo_core.policy is what every run goes through (training, the readiness
    probe, eval runs); it imports transformers, peft and the engine a run starts when the run loads its model.
    Importing runs no torch op, so no OpenMP thread exists yet at the fork."""
    import grpo_core.policy
    import grpo_core.rewards.graders
    import grpo_core.trainer  # noqa: F401


@worker_init.connect
def _sandbox_self_test(**_: Any) -> None:
    """Report the python-grader sandbox's tier and run its canaries before the pool forks (children inherit)."""
    from worker.sandbox_check import run_self_test

    run_self_test(settings.reward_sandbox)


SHUTDOWN_SIGNAL = signal.SIGUSR2


@worker_process_init.connect
def _stop_jobs_on_shutdown_signal(**_: Any) -> None:
    """In each pool process: SHUTDOWN_SIGNAL stops the running job at its next step boundary (and hands it back)."""
    from worker.runner import stop_for_shutdown

    signal.signal(SHUTDOWN_SIGNAL, lambda *_: stop_for_shutdown())


@worker_shutting_down.connect
def _forward_shutdown_to_pool(**_: Any) -> None:
    """In the main process, when a shutdown starts: pass it on to the pool processes that train."""
    from billiard.process import active_children

    for child in active_children():
        with contextlib.suppress(ProcessLookupError):  # it just ended
            os.kill(child.pid, SHUTDOWN_SIGNAL)
