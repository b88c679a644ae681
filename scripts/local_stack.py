"""Start the API (uvicorn) and a Celery worker as child processes on this machine.

Shared by ``make demo`` and the integration tests, so both run the service exactly the same way: each process in
its own session (so a stop takes its children too), its output in a log file.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def api_command(port: int) -> list[str]:
    """uvicorn through this interpreter (``-m``): also where the packages were installed with ``pip --target``
    and no console script is on PATH (a GPU machine without network, docs/guides/gpu.md)."""
    app = ["--factory", "api.main:create_app", "--host", "127.0.0.1", "--port", str(port)]
    return [sys.executable, "-m", "uvicorn", *app]


def worker_command(name: str | None = None) -> list[str]:
    """One prefork Celery worker with concurrency 1 on the ``gpu`` queue (one training job per process)."""
    cmd = [
        sys.executable,
        "-m",
        "celery",
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
    ]
    return [*cmd, "-n", name] if name else cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60, proc: subprocess.Popen | None = None) -> None:
    """Return once ``url`` answers; raise if ``proc`` exits first or the timeout passes."""
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
    """A child process whose output goes to ``log_dir/<name>.log``."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self.popen = subprocess.Popen(
            args, env=env, cwd=ROOT, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
        )

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM (Celery finishes or abandons its task), then SIGKILL after ``timeout``."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:]) if self.log.exists() else ""
