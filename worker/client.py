"""HTTP client of the API's internal worker endpoints.

Transport errors and 5xx are retried with backoff. A 409 is sorted by its code: ``stale_lease`` /
``not_claimable`` mean "another worker owns this job, or it is over: stop quietly" (StaleLease); ``lease_held``
means "ask again after Retry-After seconds" (LeaseHeld); any other 409 is a bug worth a loud error.
"""

from __future__ import annotations

import time
from typing import Any

import httpx


class StaleLease(Exception):
    """The API refused a write: another worker owns the job now, or it is no longer running."""


class LeaseHeld(Exception):
    """The job is running under another worker's live lease; it may be claimable after ``retry_after`` s."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InternalApiError(RuntimeError):
    """The API answered with an error the worker cannot act on."""


class InternalClient:
    def __init__(self, base_url: str, token: str, *, retries: int = 8) -> None:
        """``retries`` with backoff 0.5 s doubling to 30 s: about a minute, enough for an API or database restart."""
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.retries = retries

    def _post(self, path: str, body: dict[str, Any], retries: int | None = None) -> dict[str, Any]:
        tries = retries or self.retries
        delay = 0.5
        for attempt in range(tries):
            last = attempt == tries - 1
            try:
                resp = self.http.post(path, json=body)
            except httpx.TransportError:
                if last:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 30)
                continue
            if resp.status_code >= 500 and not last:
                time.sleep(delay)
                delay = min(delay * 2, 30)
                continue
            if resp.status_code >= 400:
                err = resp.json().get("error", {}) if "json" in resp.headers.get("content-type", "") else {}
                message = err.get("message", resp.text)
                code = err.get("code")
                if resp.status_code == 409 and code in ("stale_lease", "not_claimable"):
                    raise StaleLease(message)
                if resp.status_code == 409 and code == "lease_held":
                    raise LeaseHeld(message, int(resp.headers.get("Retry-After", "30")))
                raise InternalApiError(f"{path} -> {resp.status_code} {code}: {message}")
            return resp.json()
        raise AssertionError("unreachable")

    def claim(self, job_id: str, worker_id: str, claim_id: str) -> dict[str, Any]:
        return self._post(f"/internal/jobs/{job_id}/claim", {"worker_id": worker_id, "claim_id": claim_id})

    def heartbeat(self, job_id: str, epoch: int) -> dict[str, Any]:
        return self._post(f"/internal/jobs/{job_id}/heartbeat", {"epoch": epoch})

    def events(self, job_id: str, epoch: int, events: list[dict[str, Any]]) -> str | None:
        """Post events; returns what the user asked the job to do at the next step boundary: cancel, pause, None."""
        return self._post(f"/internal/jobs/{job_id}/events", {"epoch": epoch, "events": events}).get("stop")

    def checkpoint(self, job_id: str, epoch: int, step: int, key: str, state_key: str, metrics: dict[str, Any]) -> None:
        body = {"epoch": epoch, "step_number": step, "object_key": key, "state_key": state_key, "metrics": metrics}
        self._post(f"/internal/jobs/{job_id}/checkpoints", body)

    def finish(self, job_id: str, epoch: int, status: str, **extra: Any) -> None:
        # The one write that must not be lost: keep trying for about five minutes.
        self._post(f"/internal/jobs/{job_id}/finish", {"epoch": epoch, "status": status, **extra}, retries=15)

    def close(self) -> None:
        self.http.close()
