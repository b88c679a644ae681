"""Internal worker API: every write carries the lease epoch (fencing token) the claim returned."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ClaimRequest(BaseModel):
    worker_id: str = Field(min_length=1, max_length=256)


class ClaimResponse(BaseModel):
    job_id: str
    epoch: int
    lease_expires_at: int
    model: str
    seed: int
    hyperparameters: dict[str, Any]
    grader: dict[str, Any]
    training_file_key: str
    validation_file_key: str | None
    total_steps: int


class Fenced(BaseModel):
    epoch: int


class HeartbeatResponse(BaseModel):
    status: str
    cancel_requested: bool
    lease_expires_at: int


class EventIn(BaseModel):
    level: Literal["info", "warn", "error"] = "info"
    type: Literal["message", "metrics"] = "message"
    message: str
    step: int | None = None
    data: dict[str, Any] | None = None


class EventsRequest(Fenced):
    events: list[EventIn] = Field(max_length=1000)


class CheckpointRequest(Fenced):
    step_number: int = Field(ge=0)
    object_key: str
    metrics: dict[str, Any] = Field(default_factory=dict)


class FinishRequest(Fenced):
    status: Literal["succeeded", "failed", "cancelled"]
    error_code: str | None = None
    error_message: str | None = None
    trained_tokens: int | None = None
