"""Celery worker: glue between the queue, the internal API, the object store and grpo_core."""
