"""A full job on the GPU through the public API and a real Celery worker process, on Postgres, Redis and S3 where
they answer and on the embedded defaults on a bare GPU machine (tests/gpu/conftest.py). The reward is a built-in
grader: the python-grader sandbox is the CPU suite's subject, and a GPU machine may not have it set up."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.helpers import DIGIT_GRADER
from tests.integration.flow import all_events, check_succeeded_job, submit
from tests.integration.stack import Stack, wait_status


def test_a_job_through_the_api_and_a_celery_worker_trains_on_the_gpu(
    api: httpx.Client, worker: Stack, tiny_model_dir: Path, tmp_path: Path
) -> None:
    job = submit(api, grader=DIGIT_GRADER)  # every execution setting left at auto
    done = wait_status(api, job["id"], {"succeeded", "failed"}, 600, worker)
    check_succeeded_job(api, done, tiny_model_dir, tmp_path, on_cpu=False)
    ex = done["execution"]
    assert ex["device"].startswith("cuda:") and ex["gradient_checkpointing"] is True, ex
    training = [e["message"] for e in all_events(api, job["id"]) if e["message"].startswith("Training ")]
    assert training[0].startswith(f"Training {done['model']} with GRPO on {ex['device']} ({ex['device_name']}, ")
    metrics = [e for e in all_events(api, job["id"]) if e["type"] == "metrics"]
    assert all(e["data"]["memory"]["device"] == ex["device"] for e in metrics)
