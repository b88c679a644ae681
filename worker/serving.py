"""An inference replica started on demand, on this worker (the ``serve_model`` task): claim it, run
``python -m worker.inference_server`` (vLLM's OpenAI server for the base model, adapters loaded at run time) on a
free port, report it ready at the URL the API reaches this host at, heartbeat while it serves, and stop it when the
API says so (idle past INFERENCE_IDLE_SECONDS, or removed by the operator) or when this worker shuts down.

The server holds the worker's device, as a job would: a worker serving a model takes no job until the server
stops. Its device time is metered by the API from these reports (api.inference.replicas: usage kind ``serving``).
Nothing here is a server of our own: vLLM serves; this is its supervisor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Literal

import httpx

from runtime.serving_contract import ServeAnswer, ServeClaim, ServeReport
from worker.client import InternalClient, StaleLease, worker_id
from worker.runner import shutting_down
from worker.settings import WorkerSettings

log = logging.getLogger(__name__)
State = Literal["starting", "ready", "stopped", "failed"]
STOP_GRACE_SECONDS = 30.0  # SIGTERM, then this long before SIGKILL: vLLM drains its requests


class ServerFailed(Exception):
    """The server exited, or did not answer within the start timeout."""


class ServeRun:
    def __init__(self, replica_id: str, settings: WorkerSettings) -> None:
        self.replica_id = replica_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.worker_id = worker_id()
        self.claim_id = uuid.uuid4().hex
        self.device, self.device_name = _device()

    def run(self) -> None:
        try:
            claim = self.client.serve_claim(self.replica_id, self.worker_id, self.claim_id)
        except StaleLease as exc:
            log.info("inference replica %s not claimed: %s", self.replica_id, exc)
            return
        logs = self.settings.scratch_dir / "serving"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"{self.replica_id}.log"
        proc: subprocess.Popen[bytes] | None = None
        try:
            port = _free_port(self.settings.serve_ports)
            host = self.settings.rendezvous_host()
            bind = "127.0.0.1" if host.startswith("127.") else "0.0.0.0"
            command = [sys.executable, "-m", "worker.inference_server", claim.base_model, "--host", bind]
            with log_path.open("ab") as out:
                proc = subprocess.Popen([*command, "--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
            url = f"http://{host}:{port}/v1"
            log.info("serving %s for replica %s at %s (log: %s)", claim.base_model, self.replica_id, url, log_path)
            self._until_ready(proc, claim, url, log_path)
            reason = self._serve(proc, claim, url, log_path)
            log.info("inference replica %s stops: %s", self.replica_id, reason)
            _stop(proc)
            self._report("stopped", url=url, error=reason)
        except StaleLease as exc:
            log.info("inference replica %s is no longer this worker's: %s", self.replica_id, exc)
        except Exception as exc:  # the replica's boundary: whatever failed, it is reported failed, saying why
            log.exception("inference replica %s failed", self.replica_id)
            with contextlib.suppress(Exception):
                self._report("failed", error=f"{type(exc).__name__}: {exc}"[:4000])
        finally:
            if proc is not None:
                _stop(proc)
            self.client.close()

    def _report(self, state: State, *, url: str | None = None, error: str | None = None) -> ServeAnswer:
        body = ServeReport(
            claim_id=self.claim_id, state=state, url=url, device=self.device, device_name=self.device_name, error=error
        )
        return self.client.serve_report(self.replica_id, body)

    def _until_ready(self, proc: subprocess.Popen[bytes], claim: ServeClaim, url: str, log_path: Path) -> None:
        """Wait for the server's ``/models``, reporting ``starting`` every heartbeat; fail on exit or timeout."""
        started = time.monotonic()
        beat = 0.0
        while True:
            if proc.poll() is not None:
                raise ServerFailed(f"the server exited with {proc.returncode} while starting: {_tail(log_path)}")
            if _answers(url):
                log.info("inference replica %s ready in %.0f s", self.replica_id, time.monotonic() - started)
                return
            if time.monotonic() - started > claim.start_timeout_seconds:
                waited = claim.start_timeout_seconds
                raise ServerFailed(f"the server did not answer within {waited:g} s: {_tail(log_path)}")
            if time.monotonic() - beat >= claim.heartbeat_seconds:
                beat = time.monotonic()
                if self._report("starting").stop or shutting_down():
                    raise ServerFailed("stopped before it was ready")
            time.sleep(0.5)

    def _serve(self, proc: subprocess.Popen[bytes], claim: ServeClaim, url: str, log_path: Path) -> str:
        """Report ready, then heartbeat until the API says stop (the reason), the worker shuts down, or the server
        exits (raised: the replica failed)."""
        answer = self._report("ready", url=url)
        while not answer.stop:
            deadline = time.monotonic() + claim.heartbeat_seconds
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise ServerFailed(f"the server exited with {proc.returncode}: {_tail(log_path)}")
                if shutting_down():
                    return "the worker is shutting down"
                time.sleep(0.5)
            answer = self._report("ready", url=url)
        return answer.reason or "told to stop"


def _answers(url: str) -> bool:
    key = os.environ.get("INFERENCE_API_KEY")  # the server wants it on every route when it is set
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        return httpx.get(f"{url}/models", timeout=2, headers=headers).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (vLLM finishes its requests and exits), SIGKILL after STOP_GRACE_SECONDS."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _free_port(ports: range) -> int:
    """The first port of INFERENCE_SERVE_PORTS nothing listens on (another worker's replica may hold one)."""
    for port in ports:
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
            return port
    raise ServerFailed(f"no free port in INFERENCE_SERVE_PORTS ({ports.start}-{ports.stop - 1})")


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])[-1500:]
    except OSError:
        return "(no log)"


def _device() -> tuple[str, str]:
    """What the replica runs on, as an attempt's execution says it (api.usage.metering.kind_of names the kind)."""
    import torch

    from grpo_core.hardware.device import cpu_name

    if torch.cuda.is_available():
        return "cuda:0", str(torch.cuda.get_device_name(0))
    return "cpu", cpu_name()
