"""The training API's schemas: the JSON bodies of the ``tinker`` SDK's calls on ``/api/v1``, and its runs as ``/v1``
shows them (the dashboard, the generated client), below.

The SDK's bodies, as this server reads them (docs/architecture/tinker-protocol.md §2):

Each model ignores fields it does not use (the SDK sends ``type`` literals, idempotency and telemetry fields), so
a newer SDK that adds a field still works; what it does use is typed, and a wrong type is a 422 naming the field.
``seq_id``: the SDK numbers each client's calls; a call retried with the same number is the same request
(api.training_api.service.enqueue).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, StringConstraints

from api.usage.schemas import JobUsage


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=())


class CreateSession(_In):
    tags: list[str] = Field(default_factory=list)
    user_metadata: dict[str, Any] | None = None
    sdk_version: str | None = None


class SessionRef(_In):
    session_id: str


class FinishSession(_In):
    reason: dict[str, Any] | None = None
    detail: str | None = None


class LoraIn(_In):
    rank: int = 32
    seed: int | None = None
    train_unembed: bool = True
    train_mlp: bool = True
    train_attn: bool = True


class CreateModel(_In):
    session_id: str
    model_seq_id: int = Field(ge=0)
    base_model: str
    lora_config: LoraIn | None = None
    optimizer_config: dict[str, Any] | None = None
    user_metadata: dict[str, Any] | None = None


class ModelRef(_In):
    model_id: str


class AdamIn(_In):
    learning_rate: float = Field(1e-4, ge=0)
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.95, ge=0, lt=1)
    eps: float = Field(1e-12, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    grad_clip_norm: float = Field(0.0, ge=0)


class OptimStep(_In):
    model_id: str
    seq_id: int | None = None
    adam_params: AdamIn | None = None
    optimizer_params: dict[str, Any] | None = None


class SaveWeights(_In):
    model_id: str
    seq_id: int | None = None
    path: str | None = None
    overwrite: bool = False


class SaveForSampler(_In):
    model_id: str
    seq_id: int | None = None
    path: str | None = None
    sampling_session_seq_id: int | None = None
    kind: str = "snapshot"


class LoadWeights(_In):
    path: str
    seq_id: int | None = None
    optimizer: bool = False
    model_id: str | None = None
    session_id: str | None = None
    model_seq_id: int | None = None
    user_metadata: dict[str, Any] | None = None


class CreateSampler(_In):
    session_id: str
    sampling_session_seq_id: int = Field(ge=0)
    base_model: str | None = None
    model_path: str | None = None


class Chunk(_In):
    type: str = "encoded_text"
    tokens: list[int] = Field(default_factory=list)


class ModelInput(_In):
    chunks: list[Chunk]


class SamplingParamsIn(_In):
    max_tokens: int | None = None
    seed: int | None = None
    stop: str | list[str] | list[int] | None = None
    temperature: float = 1.0
    top_k: int = -1
    top_p: float = 1.0


class Sample(_In):
    sampling_session_id: str | None = None
    seq_id: int | None = None
    base_model: str | None = None
    model_path: str | None = None
    prompt: ModelInput
    num_samples: int = 1
    sampling_params: SamplingParamsIn
    prompt_logprobs: bool = False
    topk_prompt_logprobs: int = 0
    topk_sample_logprobs: int = 0


class Retrieve(_In):
    request_id: str


class WeightsInfo(_In):
    tinker_path: str


# The runs on /v1: what a user-written loop trained, beside the jobs (api.training_api.runs).
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
    usage: JobUsage = Field(
        default_factory=JobUsage,
        description="What its session used so far (device-seconds from its claim, or its requests' own where it "
        "shares a worker) and what that cost (usage.cost); a session's runs share it.",
    )


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
