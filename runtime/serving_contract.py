"""The internal API of inference replicas started on demand, both sides: a worker claims a requested replica,
reports it starting and then ready at its URL, heartbeats while it serves, and reports it stopped (or failed).

Served under ``/internal/inference/replicas`` (api.inference.internal_routes, worker token) and called by
worker.serving. Every call after the claim carries the claim id: a second delivery of the same doorbell, or a worker
presumed dead, is answered 409 ``stale_claim`` and stops quietly. The API decides when a replica stops (idle past
INFERENCE_IDLE_SECONDS, or removed by the operator) and says so in the heartbeat's answer.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

PREFIX = "/internal/inference/replicas"
CLAIM = "/{replica_id}/claim"
REPORT = "/{replica_id}/report"


def url(path: str, replica_id: str) -> str:
    return PREFIX + path.format(replica_id=replica_id)


class ServeClaimRequest(BaseModel):
    worker_id: str = Field(max_length=256)
    claim_id: str = Field(max_length=64)


class ServeClaim(BaseModel):
    replica_id: str
    base_model: str
    heartbeat_seconds: float = Field(description="How often the worker reports while the server starts and serves.")
    start_timeout_seconds: float = Field(description="How long the server may take to answer before it is failed.")


class ServeReport(BaseModel):
    """What the worker says: ``starting`` (a heartbeat while the server loads), ``ready`` (it answers at ``url``;
    later reports of ``ready`` are the heartbeats while it serves), ``stopped`` (it was told to stop, or its
    worker shuts down) or ``failed`` (it exited or never answered; ``error`` says why)."""

    claim_id: str = Field(max_length=64)
    state: Literal["starting", "ready", "stopped", "failed"]
    url: str | None = Field(None, max_length=512, description="The server's OpenAI-compatible base, .../v1.")
    device: str = Field("cpu", max_length=32, description="What the server runs on: 'cuda:0', or 'cpu'.")
    device_name: str = Field("", max_length=256, description="The GPU's name, or the CPU's model name.")
    error: str | None = Field(None, max_length=4000)


class ServeAnswer(BaseModel):
    stop: bool = Field(description="Stop the server now (idle past the timeout, removed, or no longer this claim's).")
    reason: str | None = None
