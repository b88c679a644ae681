"""HTTP client of the API's internal worker endpoints (runtime.internal): typed requests in, typed answers out.

Transport errors and 5xx are retried with backoff. A 409 is sorted by its code (runtime.internal.Refusal): those of
``STOP_QUIETLY`` mean "another worker owns this job, or it is over: stop quietly" (StaleLease); ``lease_held``
means "ask again after Retry-After seconds" (LeaseHeld); any other 409 is a bug worth a loud error. When the
API stays unreachable through every retry the run ends with ``ApiUnreachable``, an infrastructure failure.
"""

from __future__ import annotations

import os
import socket
import time
from typing import TypeVar

import httpx
from pydantic import BaseModel

from grpo_core.schemas.metrics import Execution
from runtime import eval_contract as evc
from runtime import internal as api
from runtime import serving_contract as svc
from runtime import training_api as tcc
from runtime.errors import InfrastructureError

Answer = TypeVar("Answer", bound=BaseModel)


def worker_id() -> str:
    """This worker process as the API's leases name it (a job's, an eval run's, a session's, a replica's): its host
    and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


class StaleLease(Exception):
    """The API refused a write: another worker owns the job now, or it is no longer running."""


class LeaseHeld(Exception):
    """The job is running under another worker's live lease; it may be claimable after ``retry_after`` s."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InternalApiError(InfrastructureError):
    """The API answered with an error the worker cannot act on."""


class ApiUnreachable(InfrastructureError):
    """The API could not be reached through every retry (the httpx error is the cause)."""


class InternalClient:
    def __init__(self, base_url: str, token: str, *, retries: int = 8) -> None:
        """``retries`` with backoff 0.5 s doubling to 30 s: about a minute, enough for an API or database restart."""
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.retries = retries

    def _post(self, path: str, body: BaseModel, answer: type[Answer], retries: int | None = None) -> Answer:
        tries = retries or self.retries
        delay = 0.5
        payload = body.model_dump(mode="json")
        for attempt in range(tries):
            last = attempt == tries - 1
            try:
                resp = self.http.post(path, json=payload)
            except httpx.TransportError as exc:
                if last:
                    raise ApiUnreachable(f"{path}: {type(exc).__name__}: {exc}") from exc
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
                if resp.status_code == 409 and code in api.STOP_QUIETLY:
                    raise StaleLease(message)
                if resp.status_code == 409 and code == api.Refusal.lease_held:
                    raise LeaseHeld(message, int(resp.headers.get("Retry-After", "30")))
                raise InternalApiError(f"{path} -> {resp.status_code} {code}: {message}")
            return answer.model_validate(resp.json())
        raise AssertionError("unreachable")

    def eval_claim(self, run_id: str, worker_id: str, claim_id: str) -> evc.EvalClaim:
        body = evc.EvalClaimRequest(worker_id=worker_id, claim_id=claim_id)
        return self._post(evc.url(evc.CLAIM, run_id), body, evc.EvalClaim)

    def eval_items(self, run_id: str, body: evc.EvalItemsRequest) -> int:
        return self._post(evc.url(evc.ITEMS, run_id), body, evc.EvalItemsResponse).added

    def eval_finish(self, run_id: str, body: evc.EvalFinishRequest) -> str:
        return self._post(evc.url(evc.FINISH, run_id), body, evc.EvalFinishResponse).status

    def serve_claim(self, replica_id: str, worker_id: str, claim_id: str) -> svc.ServeClaim:
        body = svc.ServeClaimRequest(worker_id=worker_id, claim_id=claim_id)
        return self._post(svc.url(svc.CLAIM, replica_id), body, svc.ServeClaim)

    def serve_report(self, replica_id: str, body: svc.ServeReport) -> svc.ServeAnswer:
        return self._post(svc.url(svc.REPORT, replica_id), body, svc.ServeAnswer)

    def training_claim(self, session_id: str, body: tcc.Claim) -> tcc.SessionClaim:
        return self._post(tcc.url(tcc.CLAIM, session_id), body, tcc.SessionClaim)

    def training_claim_next(self, body: tcc.ClaimNext) -> tcc.SessionClaim | None:
        """One more session for this worker's pool (api.training_api.leases.claim_next), or None."""
        return self._post(tcc.PREFIX + tcc.CLAIM_NEXT, body, tcc.ClaimNextAnswer).claim

    def training_next(self, session_id: str, body: tcc.NextRequest) -> tcc.NextAnswer:
        return self._post(tcc.url(tcc.NEXT, session_id), body, tcc.NextAnswer)

    def training_result(self, session_id: str, request_id: str, body: tcc.ResultPost) -> tcc.Ack:
        return self._post(tcc.url(tcc.RESULT, session_id, request_id), body, tcc.Ack, retries=15)

    def training_heartbeat(self, session_id: str, body: tcc.Fenced) -> tcc.Ack:
        return self._post(tcc.url(tcc.HEARTBEAT, session_id), body, tcc.Ack)

    def training_release(self, session_id: str, body: tcc.Release) -> tcc.Ack:
        return self._post(tcc.url(tcc.RELEASE, session_id), body, tcc.Ack)

    def claim_next(self, body: api.ClaimNextRequest) -> api.ClaimResponse | None:
        """The next job the API chose for this worker (api.jobs.scheduling), or None."""
        return self._post(api.PREFIX + api.CLAIM_NEXT, body, api.ClaimNextResponse).claim

    def claim(self, job_id: str, worker_id: str, claim_id: str) -> api.ClaimResponse:
        body = api.ClaimRequest(worker_id=worker_id, claim_id=claim_id)
        return self._post(api.url(api.CLAIM, job_id), body, api.ClaimResponse)

    def heartbeat(self, job_id: str, epoch: int) -> api.HeartbeatResponse:
        return self._post(api.url(api.HEARTBEAT, job_id), api.Fenced(epoch=epoch), api.HeartbeatResponse)

    def events(self, job_id: str, epoch: int, events: list[api.EventIn]) -> api.Stop | None:
        """Post events; returns what the user asked the job to do at the next step boundary: cancel, pause, None."""
        body = api.EventsRequest(epoch=epoch, events=events)
        return self._post(api.url(api.EVENTS, job_id), body, api.EventsResponse).stop

    def readiness(self, job_id: str, body: api.ReadinessRequest) -> api.Stop | None:
        return self._post(api.url(api.READINESS, job_id), body, api.HeartbeatResponse).stop

    def execution(self, job_id: str, epoch: int, execution: Execution) -> api.Stop | None:
        body = api.ExecutionRequest(epoch=epoch, execution=execution)
        return self._post(api.url(api.EXECUTION, job_id), body, api.HeartbeatResponse).stop

    def checkpoint(self, job_id: str, body: api.CheckpointRequest) -> api.CheckpointResponse:
        return self._post(api.url(api.CHECKPOINTS, job_id), body, api.CheckpointResponse)

    def rendezvous(self, job_id: str, epoch: int, endpoint: str) -> api.Stop | None:
        """Publish where this node's torchrun hosts a multi-node job's rendezvous; the API rings the other nodes."""
        body = api.RendezvousRequest(epoch=epoch, endpoint=endpoint)
        return self._post(api.url(api.RENDEZVOUS, job_id), body, api.HeartbeatResponse).stop

    def join(self, job_id: str, epoch: int, worker_id: str) -> api.JoinResponse:
        """Become one of a multi-node job's other nodes for this attempt; StaleLease when there is no place."""
        body = api.JoinRequest(epoch=epoch, worker_id=worker_id)
        return self._post(api.url(api.JOIN, job_id), body, api.JoinResponse)

    def finish(self, job_id: str, body: api.FinishRequest) -> api.FinishResponse:
        # The one write that must not be lost: keep trying for about five minutes.
        return self._post(api.url(api.FINISH, job_id), body, api.FinishResponse, retries=15)

    def model_source(self, model_id: str) -> api.ModelSource | None:
        """A registered model's files, or None when the registry has no such model (one try: a launcher asks)."""
        try:
            resp = self.http.get(f"/internal/models/{model_id}")
        except httpx.TransportError as exc:
            raise ApiUnreachable(f"/internal/models/{model_id}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code == 404:
            return None
        if resp.status_code >= 400:
            raise InternalApiError(f"/internal/models/{model_id} -> {resp.status_code}: {resp.text[:300]}")
        return api.ModelSource.model_validate(resp.json())

    def close(self) -> None:
        self.http.close()
