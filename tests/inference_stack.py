"""The demo job trained on real services, then served by the real vLLM CPU server (a pytest plugin, see
tests/conftest.py): shared by tests/integration/test_inference.py and the playground's browser test, made once per
test session and only when one of them asks.

Postgres, Redis, moto's S3 server, the API and a Celery worker train SmolLM2-135M-Instruct on the demo's
arithmetic task (scripts/demo.py: same data, grader and settings). The worker is then stopped (two cores: the
server should not share them with training) and ``python -m worker.inference_server`` starts vLLM with run-time
LoRA loading; the API was started with INFERENCE_BASE_URL pointing at it. The API wants a project key (made with
the operator's CLI), so the browser test sees the login page in force.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from grpo_core.models.catalog import SMOLLM2_ID, prepare_smollm2
from scripts.demo import GRADER_SOURCE, HYPERPARAMETERS, split
from scripts.local_stack import Proc, free_port, wait_http
from tests.integration.stack import Stack, production_env, running_api, wait_status
from tests.services import fresh_database, leased_redis_db

# scripts/demo.py's job, without validation (this fixture uploads no validation file)
DEMO_HP = {k: v for k, v in HYPERPARAMETERS.items() if k != "eval_interval"} | {"max_steps": 20}
GRADER = {"type": "python", "name": "first_number", "source": GRADER_SOURCE}


@dataclass
class ServedDemo:
    stack: Stack
    api_key: str
    job: dict[str, Any]
    held_out: list[dict[str, str]]
    inference_url: str
    server_log: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.stack.url, headers={"Authorization": f"Bearer {self.api_key}"}, timeout=300)


def _train(api: httpx.Client, stack: Stack, train: list[dict[str, str]]) -> dict[str, Any]:
    import json

    data = "".join(json.dumps(r) + "\n" for r in train).encode()
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("train.jsonl", data)})
    assert f.status_code == 201, f.text
    method = {"type": "reinforcement", "reinforcement": {"grader": GRADER, "hyperparameters": DEMO_HP}}
    body = {"model": SMOLLM2_ID, "training_file": f.json()["id"], "method": method, "seed": 0, "suffix": "demo-arith"}
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    job = wait_status(api, r.json()["id"], {"succeeded", "failed", "cancelled"}, 1200, stack)
    assert job["status"] == "succeeded", job
    return job


@pytest.fixture(scope="session")
def smollm2_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("smollm2")
    prepare_smollm2(root)
    return root


@pytest.fixture(scope="session")
def served_demo(
    s3: dict[str, str], smollm2_catalog: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedDemo]:
    port = free_port()
    inference_url = f"http://127.0.0.1:{port}/v1"
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, smollm2_catalog, tmp_path_factory.mktemp("state"))
        env |= {"INFERENCE_BASE_URL": inference_url, "OMP_NUM_THREADS": "2", "LEASE_SECONDS": "120"}
        with running_api(env, logs_dir) as stack:
            project = stack.admin("projects", "create", "inference-tests")
            key = stack.admin("keys", "create", "--project", project, "--name", "inference")
            train, held_out = split()
            with httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api:
                stack.start_worker()
                job = _train(api, stack, train)
                stack.stop_worker()
            server = Proc(
                "inference",
                [sys.executable, "-m", "worker.inference_server", SMOLLM2_ID, "--port", str(port)],
                stack.env,
                logs_dir,
            )
            try:
                started = time.monotonic()
                wait_http(f"{inference_url}/models", proc=server.popen, timeout=600)
                print(f"vLLM inference server ready in {time.monotonic() - started:.0f} s")
                yield ServedDemo(stack, key, job, held_out, inference_url, logs_dir / "inference.log")
            finally:
                server.stop()
