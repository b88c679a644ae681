"""The training API's runs as ``/v1`` shows them (the dashboard, the generated client): what a user-written loop
trained, beside the jobs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, FiniteFloat, StringConstraints

MAX_REPORTED = 64  # names a step's reported metrics may hold, merged over its reports


class RunCheckpoint(BaseModel):
    id: str = Field(description="This service's checkpoint id (ftckpt-…): a model name for /v1/chat/completions.")
    kind: str = Field(description="training (weights and optimizer: load_state) or sampler (a PEFT adapter).")
    name: str
    tinker_path: str = Field(description="tinker://<run>/<weights|sampler_weights>/<name>, what the SDK names it.")
    size_bytes: int | None = None
    created_at: int


class TrainingRunObject(BaseModel):
    id: str = Field(description="<session>:train:<n>, as the tinker SDK names a training client.")
    object: Literal["training_run"] = "training_run"
    session_id: str
    base_model: str
    lora_rank: int
    status: str = Field(description="Its session's state: active, finished, expired or lost.")
    error: str | None = Field(None, description="Why the session is not active, when it says.")
    steps: int = Field(description="optim_step calls done.")
    created_at: int
    last_request_at: int
    checkpoints: list[RunCheckpoint]


class RunStep(BaseModel):
    """One optimizer step of a run: what its forward_backward calls since the previous step summed to, the step's
    own numbers, and what the client reported for it."""

    step: int
    loss: float | None = Field(None, description="Sum of loss:sum over the step's forward_backward calls.")
    tokens: float | None = Field(None, description="Tokens that carried loss in them (tokens:sum).")
    loss_per_token: float | None = None
    grad_norm: float | None = None
    learning_rate: float | None = None
    reported: dict[str, float] = Field(default_factory=dict, description="The client's own metrics (POSTed).")
    created_at: int | None = None


class RunMetrics(BaseModel):
    object: Literal["list"] = "list"
    data: list[RunStep]
    has_more: bool = False


class ReportMetrics(BaseModel):
    """Metrics of one step of your loop that the service cannot see (a reward, an accuracy), drawn beside the loss.
    A step reported again merges its new values over the old."""

    step: int = Field(ge=1, description="The optimizer step they belong to (1 = after the first optim_step).")
    metrics: dict[Annotated[str, StringConstraints(min_length=1, max_length=64)], FiniteFloat] = Field(
        min_length=1, max_length=MAX_REPORTED, description=f"Finite numbers by name, at most {MAX_REPORTED} a step."
    )
