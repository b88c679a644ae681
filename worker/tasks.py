"""The Celery tasks: each hands its job (a training job, a node of one, an eval run, a training-API session) to its
runner."""

from __future__ import annotations

import logging

from runtime.queue import JOIN_JOB, RUN_EVAL, RUN_JOB, RUN_SESSION, SERVE_MODEL
from worker.celery_app import app
from worker.evals import EvalRunner
from worker.node import JoinRun
from worker.pool import PoolRun
from worker.serving import ServeRun
from worker.settings import get_settings
from worker.training_api.pool import SessionPool

log = logging.getLogger(__name__)


@app.task(name=RUN_JOB)
def run_job(job_id: str) -> None:
    """Claim the next job the API chooses for this worker and train it; every outcome is reported to the API.

    The message is only a doorbell (``job_id`` names what rang it, for the logs): the API picks the job by priority,
    fair share and age (api.jobs.scheduling). A doorbell that finds nothing claimable is dropped: the API rings
    again when a job ends, when its reaper finds a queued job unclaimed, or when a backoff passes. A job that may
    share the worker opens a pool that takes more jobs of its base model between its steps (worker.pool).
    """
    PoolRun(job_id, get_settings()).run()


@app.task(name=JOIN_JOB)
def join_job(job_id: str, epoch: int) -> None:
    """Join attempt ``epoch`` of a multi-node job as one of its other nodes (worker.node); a doorbell that finds no
    place (the job has its nodes, or the attempt is over) is dropped."""
    JoinRun(job_id, epoch, get_settings()).run()


@app.task(name=RUN_EVAL)
def run_eval(run_id: str) -> None:
    """Claim eval run ``run_id`` and run it (worker.evals); a run another worker holds is left to it."""
    EvalRunner(run_id, get_settings()).run()


@app.task(name=RUN_SESSION)
def run_session(session_id: str) -> None:
    """Claim training-API session ``session_id`` and serve its requests until it is closed or idle
    (worker.training_api); a session another worker holds is left to it. A worker with room for several serves
    more sessions of the base models it holds meanwhile (worker.training_api.pool)."""
    SessionPool(session_id, get_settings()).run()


@app.task(name=SERVE_MODEL)
def serve_model(replica_id: str) -> None:
    """Start inference replica ``replica_id`` (a base model the API was asked for and no replica serves) and serve
    it until the API says it is idle (worker.serving); a replica another worker holds is left to it."""
    ServeRun(replica_id, get_settings()).run()
