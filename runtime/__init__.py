"""runtime: what the API process and the worker process share, and nothing else.

- ``runtime.settings``: ``CommonSettings`` (state dir, broker, object store, worker token, grader services);
  ``api.core.settings.ApiSettings`` and ``worker.settings.WorkerSettings`` extend it with what only one side reads.
- ``runtime.storage``: the object store (a local folder or any S3-compatible server).
- ``runtime.keys``: where objects live in the store (files, a job's checkpoints), built and parsed in one place.
- ``runtime.internal``: the internal worker API's requests and responses (paths and bodies), both sides typed.
- ``runtime.queue``: the Celery task name and queue the API rings and the worker serves.
- ``runtime.errors``: infrastructure failures (store, network, API) a job may be retried after.

It imports neither FastAPI, SQLAlchemy, Celery nor torch (tests/unit/test_layering.py checks it), so both
images carry it; from grpo_core it takes only the torch-free schemas (job config, graders, step metrics).
"""
