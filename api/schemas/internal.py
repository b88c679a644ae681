"""Internal worker API: every write carries the lease epoch (fencing token) the claim returned."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ClaimRequest(BaseModel):
    worker_id: str = Field(min_length=1, max_length=256)
    claim_id: str = Field(min_length=8, max_length=64, description="Random per run: a retried claim is idempotent.")


class ResumePoint(BaseModel):
    step: int
    adapter_key: str
    state_key: str


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
    object_prefix: str = Field(description="Where this job's objects go: checkpoints under <prefix>checkpoints/.")
    resume: ResumePoint | None = Field(None, description="The last registered checkpoint to continue from.")


class Fenced(BaseModel):
    epoch: int


class HeartbeatResponse(BaseModel):
    status: str
    cancel_requested: bool
    stop: Literal["cancel", "pause"] | None = Field(None, description="Stop at the next step boundary, and why.")
    lease_expires_at: int


class EventIn(BaseModel):
    level: Literal["info", "warn", "error"] = "info"
    type: Literal["message", "metrics"] = "message"
    message: str
    step: int | None = None
    data: dict[str, Any] | None = None


class EventsRequest(Fenced):
    events: list[EventIn] = Field(max_length=1000)


class EventsResponse(BaseModel):
    added: int
    cancel_requested: bool
    stop: Literal["cancel", "pause"] | None = Field(None, description="Stop at the next step boundary, and why.")


class CheckpointRequest(Fenced):
    step_number: int = Field(ge=0)
    object_key: str
    state_key: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)


class FinishRequest(Fenced):
    status: Literal["succeeded", "failed", "cancelled", "paused", "preempted"] = Field(
        description="preempted: the worker is shutting down and stopped at a step boundary after saving a "
        "checkpoint; the job goes back to the queue without using up an attempt."
    )
    retryable: bool = Field(False, description="An infrastructure failure: re-queue while attempts remain.")
    error_code: str | None = None
    error_message: str | None = None
    trained_tokens: int | None = None
