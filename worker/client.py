"""HTTP client of the API's internal worker endpoints. Retries transport errors; a 409 means "stop"."""

from __future__ import annotations

import time
from typing import Any

import httpx


class StaleLease(Exception):
    """The API refused a write: another worker owns the job now, or it is no longer running."""


class InternalClient:
    def __init__(self, base_url: str, token: str, *, retries: int = 5) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.retries = retries

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        delay = 0.5
        for attempt in range(self.retries):
            try:
                resp = self.http.post(path, json=body)
            except httpx.TransportError:
                if attempt == self.retries - 1:
                    raise
                time.sleep(delay)
                delay *= 2
                continue
            if resp.status_code == 409:
                raise StaleLease(resp.json().get("error", {}).get("message", resp.text))
            if resp.status_code >= 500 and attempt < self.retries - 1:
                time.sleep(delay)
                delay *= 2
                continue
            resp.raise_for_status()
            return resp.json()
        raise AssertionError("unreachable")

    def claim(self, job_id: str, worker_id: str) -> dict[str, Any]:
        return self._post(f"/internal/jobs/{job_id}/claim", {"worker_id": worker_id})

    def heartbeat(self, job_id: str, epoch: int) -> dict[str, Any]:
        return self._post(f"/internal/jobs/{job_id}/heartbeat", {"epoch": epoch})

    def events(self, job_id: str, epoch: int, events: list[dict[str, Any]]) -> None:
        self._post(f"/internal/jobs/{job_id}/events", {"epoch": epoch, "events": events})

    def checkpoint(self, job_id: str, epoch: int, step: int, key: str, metrics: dict[str, Any]) -> None:
        self._post(
            f"/internal/jobs/{job_id}/checkpoints",
            {"epoch": epoch, "step_number": step, "object_key": key, "metrics": metrics},
        )

    def finish(self, job_id: str, epoch: int, status: str, **extra: Any) -> None:
        self._post(f"/internal/jobs/{job_id}/finish", {"epoch": epoch, "status": status, **extra})

    def close(self) -> None:
        self.http.close()
