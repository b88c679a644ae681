"""Real processes for integration tests: uvicorn (the API), a Celery worker, a moto S3 server.

Each is a child process on loopback with its own environment; nothing is faked in the test process. The stack
talks to whatever DATABASE_URL / BROKER_URL / S3 settings it is given, so the same harness runs the production
shape (Postgres, Redis, S3) and the embedded defaults (SQLite, filesystem broker, local folder).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from scripts.local_stack import ROOT, Proc, api_command, free_port, wait_http, worker_command


def service_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "BROKER_", "S3_", "AWS_"))}
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)  # carried wheels stay
    env.update({"PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}, **extra)
    return env


def production_env(
    pg_url: str, redis_url: str, s3: dict[str, str], catalog_dir: Path, state_dir: Path
) -> dict[str, str]:
    """The production shape (Postgres, Redis broker, S3) with test-speed timings."""
    return {
        "DATABASE_URL": pg_url,
        "BROKER_URL": redis_url,
        "MODEL_CATALOG_DIR": str(catalog_dir),
        "STATE_DIR": str(state_dir),
        "WORKER_TOKEN": secrets.token_hex(16),
        "ADMIN_TOKEN": secrets.token_hex(16),
        "LEASE_SECONDS": "15",
        # the reaper looks every second; a doorbell unanswered for 5 s is rung again (production: 30 s / 300 s)
        "REAPER_INTERVAL_SECONDS": "1",
        "REQUEUE_AFTER_SECONDS": "5",
        "RETRY_BACKOFF_SECONDS": "2",
        # one job on 2 processes, or 2 "nodes" on loopback (tests/integration/test_distributed_jobs.py)
        "MAX_DEVICES_PER_NODE": "2",
        "MAX_NODES": "2",
        "ADVERTISE_ADDR": "127.0.0.1",
        "RENDEZVOUS_TIMEOUT_SECONDS": "120",
        **s3,
    }


@contextmanager
def moto_s3(log_dir: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    proc = Proc("moto", command, service_env({}), log_dir)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url, proc=proc.popen)
        yield url
    finally:
        proc.stop()


class Stack:
    """The API and (optionally) a worker, sharing one environment."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = service_env(env | {"API_URL": self.url})
        self.log_dir = log_dir
        self.api: Proc | None = None
        self.worker: Proc | None = None

    def admin(self, *args: str) -> str:
        """``python -m api.admin ARGS`` against this stack's database: its output, stripped (it must succeed)."""
        out = subprocess.run(
            [sys.executable, "-m", "api.admin", *args], env=self.env, cwd=ROOT, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def project_key(self, name: str) -> tuple[str, str]:
        """(project id, API key) of a new project ``name`` with one key of the same name."""
        project = self.admin("projects", "create", name)
        return project, self.admin("keys", "create", "--project", project, "--name", name)

    def start_api(self) -> None:
        self.api = Proc("api", api_command(self.port), self.env, self.log_dir)
        wait_http(f"{self.url}/healthz", proc=self.api.popen)

    def start_worker(self) -> None:
        self.worker = Proc("worker", worker_command(f"w{self.port}@%h"), self.env, self.log_dir)

    def extra_worker(self, n: int) -> Proc:
        """Another worker process on the same queue (the caller stops it)."""
        return Proc(f"worker{n}", worker_command(f"w{self.port}-{n}@%h"), self.env, self.log_dir)

    def stop_api(self) -> None:
        if self.api:
            self.api.stop()
            self.api = None

    def training_pids(self) -> list[int]:
        """The Celery pool children of the worker: the processes that train."""
        import subprocess

        assert self.worker is not None
        out = subprocess.run(["pgrep", "-P", str(self.worker.popen.pid)], capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def stop_worker(self) -> None:
        if self.worker:
            self.worker.stop()
            self.worker = None

    def stop(self) -> None:
        self.stop_worker()
        if self.api:
            self.api.stop()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.tail()}" for p in (self.api, self.worker) if p)


@contextmanager
def running_api(env: dict[str, str], log_dir: Path) -> Iterator[Stack]:
    """The API up (a worker when the test starts one); everything stopped on the way out."""
    stack = Stack(env, log_dir)
    try:
        stack.start_api()
        yield stack
    finally:
        stack.stop()


def wait_status(client: httpx.Client, job_id: str, statuses: set[str], timeout: float, stack: Stack) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = client.get(f"/v1/fine_tuning/jobs/{job_id}").json()
        if job["status"] in statuses:
            return job
        time.sleep(0.5)
    raise AssertionError(f"job stayed {job.get('status')} for {timeout}s\n{stack.logs()}")
