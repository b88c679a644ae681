"""Real processes for integration tests: uvicorn (the API), a Celery worker, a moto S3 server.

Each is a child process on loopback with its own environment; nothing is faked in the test process. The stack
talks to whatever DATABASE_URL / BROKER_URL / S3 settings it is given, so the same harness runs the production
shape (Postgres, Redis, S3) and the embedded defaults (SQLite, filesystem broker, local folder).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.helpers import ROOT

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


class Proc:
    """A child process whose output goes to a log file that is printed if a test needs it."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self.popen = subprocess.Popen(
            args, env=env, cwd=ROOT, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
        )

    def stop(self, timeout: float = 20) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:]) if self.log.exists() else ""


def service_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "BROKER_", "S3_", "AWS_"))}
    env.update({"PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}, **extra)
    return env


@contextmanager
def moto_s3(log_dir: Path) -> Iterator[str]:
    port = free_port()
    proc = Proc("moto", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], service_env({}), log_dir)
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

    def start_api(self) -> None:
        args = [
            str(BIN / "uvicorn"),
            "--factory",
            "api.main:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self.api = Proc("api", args, self.env, self.log_dir)
        wait_http(f"{self.url}/healthz", proc=self.api.popen)

    def start_worker(self) -> None:
        args = [
            str(BIN / "celery"),
            "-A",
            "worker.celery_app",
            "worker",
            "-Q",
            "gpu",
            "-c",
            "1",
            "--pool",
            "prefork",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"w{self.port}@%h",
        ]
        self.worker = Proc("worker", args, self.env, self.log_dir)

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


def wait_status(client: httpx.Client, job_id: str, statuses: set[str], timeout: float, stack: Stack) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = client.get(f"/v1/fine_tuning/jobs/{job_id}").json()
        if job["status"] in statuses:
            return job
        time.sleep(0.5)
    raise AssertionError(f"job stayed {job.get('status')} for {timeout}s\n{stack.logs()}")
