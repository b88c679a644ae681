"""The job queue's names, shared by the API (which rings) and the worker (which serves).

The message is a doorbell: ``run_job(job_id)`` on the ``gpu`` queue. The job row is committed before it is sent
and the worker claims the job through the internal API, so a lost or duplicated message can delay a job but
never corrupt it.
"""

from __future__ import annotations

RUN_JOB = "worker.tasks.run_job"  # the task's registered name (worker.tasks.run_job declares it with this)
JOIN_JOB = "worker.tasks.join_job"  # join_job(job_id, epoch): become another node of a multi-node job's attempt
GPU_QUEUE = "gpu"  # one Celery worker process per GPU serves it (prefetch 1)
RUN_EVAL = "worker.tasks.run_eval"  # run_eval(run_id): an eval run, on the same queue (a run is small)
RUN_SESSION = "worker.tasks.run_session"  # run_session(session_id): hold a training API session (api.training_api)
SERVE_MODEL = (
    "worker.tasks.serve_model"  # serve_model(replica_id): start an inference server on demand (worker.serving)
)
