"""The internal API of training sessions, both sides: a worker claims a session, takes its requests in order,
posts each one's result, and hands the session back.

Served under ``/internal/training`` (api.training_api.internal_routes, worker token) and called by worker.training_api.
A session is leased like a job: the claim records the worker's claim id and every later call carries it, so a
worker presumed dead (its lease expired, the session marked lost) can never write a result into it: the API
answers 409 ``stale_claim`` and the worker stops.

Every request is one typed payload (``Request``, a union on ``kind``): the worker's view of one SDK call, already
validated by the API (api.training_api.service), so the worker trusts its shapes and names, and what it still finds
wrong (a token id beyond the vocabulary) is a ``user`` error of that request alone. Every answer is one typed result
of the same kind (``Result``), validated by the API when it is posted; the API shapes the SDK's JSON or protobuf from
it (api.training_api.futures). Both sides dispatch on these types, never on a name built at run time.
"""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter

from runtime.internal import ModelSource

PREFIX = "/internal/training/sessions"
CLAIM = "/{session_id}/claim"
NEXT = "/{session_id}/next"
RESULT = "/{session_id}/results/{request_id}"
HEARTBEAT = "/{session_id}/heartbeat"
RELEASE = "/{session_id}/release"
CLAIM_NEXT = "/claim-next"  # a worker's pool of sessions asks for one more (no session id: the API picks)


def url(path: str, session_id: str, request_id: str = "") -> str:
    return PREFIX + path.format(session_id=session_id, request_id=request_id)


class RequestKind(enum.StrEnum):
    """What a request asks of the session's worker (one per SDK call that returns a future)."""

    create_model = "create_model"
    load_weights = "load_weights"
    forward_backward = "forward_backward"
    optim_step = "optim_step"
    save_weights = "save_weights"
    save_weights_for_sampler = "save_weights_for_sampler"
    sample = "sample"


class Claim(BaseModel):
    worker_id: str
    claim_id: str
    shared: bool = Field(
        False,
        description="The worker serves several sessions at once (a pool): the session is billed the seconds its "
        "requests held the device (``ResultPost.device_seconds``), not its lease's wall clock.",
    )


class SessionClaim(BaseModel):
    session_id: str
    project_id: str
    lease_seconds: int = Field(description="Renew (heartbeat) well within this, or the session is lost.")
    idle_timeout_seconds: int = Field(description="Hand the session back after this long without a request.")


class RunShape(BaseModel):
    """A training run's adapter shape, as ``create_model`` asks for it."""

    rank: int
    train_mlp: bool
    train_attn: bool


class ClaimNext(BaseModel):
    """A worker serving sessions asks for one more that fits what it holds: the oldest waiting session no worker
    holds whose first pending request needs one of ``bases`` (a worker's pool, worker.training_api.pool), and with
    ``shape``, whose first request creates a run of that shape (a pool of jobs lending its resident, worker.pool)."""

    worker_id: str
    claim_id: str
    bases: list[str] = Field(min_length=1, max_length=64, description="Base model ids resident on the worker.")
    shape: RunShape | None = Field(
        None, description="Only a session whose first request creates a run of this adapter shape; None: any."
    )


class ClaimNextAnswer(BaseModel):
    claim: SessionClaim | None = None


class Fenced(BaseModel):
    claim_id: str


class NextRequest(BaseModel):
    claim_id: str
    wait_seconds: float = Field(10.0, ge=0, le=30, description="How long the API may hold the call for work.")
    max_batch: int = Field(
        1,
        ge=1,
        le=256,
        description="At most this many requests in one answer: when the next is a sample, the sample requests "
        "queued right after it come with it (``NextAnswer.more``), to be decoded together.",
    )


class ModelSpec(BaseModel):
    """A base model as the worker loads it: a registry model's files, or a folder of the worker's catalog."""

    id: str
    source: ModelSource | None = None


class CheckpointTarget(BaseModel):
    """Where a save goes (the API picked the object key) and what it answers as."""

    checkpoint_id: str
    object_key: str
    tinker_path: str


class SamplerSpec(BaseModel):
    """What a sampling client samples from: the base model alone, an adapter in the store (a sampler checkpoint),
    or a training run's weights as the worker saved them for this session (``snapshot_of``: the run's id)."""

    id: str
    base: ModelSpec
    adapter_key: str | None = None
    snapshot_of: str | None = None


class NextAnswer(BaseModel):
    request: WorkItem | None = None
    more: list[WorkItem] = Field(
        default_factory=list,
        description="Sample requests queued right after ``request`` (a sample too), now running with it.",
    )
    stop: Literal["finished"] | None = Field(
        None, description="The client closed the session (or is gone, and the API expired it): hand it back."
    )


class Ack(BaseModel):
    ok: bool = True
    stop: Literal["finished"] | None = None


class Release(BaseModel):
    claim_id: str
    reason: Literal["idle", "finished", "error"]
    message: str | None = None


# Requests: one typed payload per kind, as the API writes it and the worker reads it; ``kind`` says which.
class CreateModel(BaseModel):
    kind: Literal[RequestKind.create_model] = RequestKind.create_model
    base: ModelSpec
    rank: int
    seed: int
    train_mlp: bool = True
    train_attn: bool = True
    exact: bool = Field(
        False,
        description="Its forward_backward calls compute alone, bit for bit as on a worker of its own, never in a "
        "pass shared with other runs' (grpo_core.training_api.together; the SDK's user_metadata pool_exact).",
    )


class LoadWeights(BaseModel):
    """Load a training checkpoint into the target: a run of this session (``create``: a new one, built first)."""

    kind: Literal[RequestKind.load_weights] = RequestKind.load_weights
    object_key: str
    optimizer: bool
    create: CreateModel | None = None


class DatumIn(BaseModel):
    tokens: list[int]
    inputs: dict[str, list[int] | list[float]] = Field(description="Token ids stay ints (target_tokens).")


class ForwardBackward(BaseModel):
    kind: Literal[RequestKind.forward_backward] = RequestKind.forward_backward
    loss_fn: str
    config: dict[str, float] = Field(default_factory=dict)
    forward_only: bool = False
    data: list[DatumIn]


class Adam(BaseModel):
    learning_rate: float = 1e-4
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-12
    weight_decay: float = 0.0
    grad_clip_norm: float = 0.0


class OptimStep(BaseModel):
    kind: Literal[RequestKind.optim_step] = RequestKind.optim_step
    adam: Adam


class SaveWeights(BaseModel):
    kind: Literal[RequestKind.save_weights] = RequestKind.save_weights
    to: CheckpointTarget


class SaveForSampler(BaseModel):
    """A named save (``to``: an adapter in the store) or an unnamed one (``sampler_id``: a sampling client of this
    session that samples the run's weights as they are now)."""

    kind: Literal[RequestKind.save_weights_for_sampler] = RequestKind.save_weights_for_sampler
    to: CheckpointTarget | None = None
    sampler_id: str | None = None


class Sample(BaseModel):
    kind: Literal[RequestKind.sample] = RequestKind.sample
    sampler: SamplerSpec
    prompt: list[int]
    num_samples: int
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None = None
    stop: list[str] | list[int] | None = None
    prompt_logprobs: bool = False


Request = Annotated[
    CreateModel | LoadWeights | ForwardBackward | OptimStep | SaveWeights | SaveForSampler | Sample,
    Field(discriminator="kind"),
]
_REQUESTS: TypeAdapter[Request] = TypeAdapter(Request)


def parse_request(data: object) -> Request:
    """The typed request ``data`` (a payload with its ``kind``) holds; pydantic's ValidationError otherwise."""
    return _REQUESTS.validate_python(data)


class WorkItem(BaseModel):
    id: str
    target: str | None = Field(None, description="The training run or sampling client it acts on.")
    request: Request


# Results: one typed answer per kind, what the worker computed; the API shapes the SDK's answer from it and the
# request (api.training_api.futures), so the worker never knows the SDK's wire. A number that is not finite
# crosses the wire as None (JSON has no NaN).
class CreateModelResult(BaseModel):
    kind: Literal[RequestKind.create_model] = RequestKind.create_model


class LoadWeightsResult(BaseModel):
    kind: Literal[RequestKind.load_weights] = RequestKind.load_weights


class ForwardBackwardResult(BaseModel):
    kind: Literal[RequestKind.forward_backward] = RequestKind.forward_backward
    logprobs: list[list[float | None]] = Field(description="Per datum, per position (None where it has none).")
    metrics: dict[str, float | None]


class OptimStepResult(BaseModel):
    kind: Literal[RequestKind.optim_step] = RequestKind.optim_step
    metrics: dict[str, float | None]


class SaveWeightsResult(BaseModel):
    kind: Literal[RequestKind.save_weights] = RequestKind.save_weights
    size_bytes: int


class SaveForSamplerResult(BaseModel):
    kind: Literal[RequestKind.save_weights_for_sampler] = RequestKind.save_weights_for_sampler
    size_bytes: int | None = Field(None, description="A named save's tar; None for an unnamed one.")


class SampledSequence(BaseModel):
    tokens: list[int]
    logprobs: list[float | None] | None = None
    stop_reason: Literal["stop", "length"]


class SampleResult(BaseModel):
    kind: Literal[RequestKind.sample] = RequestKind.sample
    sequences: list[SampledSequence]
    prompt_logprobs: list[float | None] | None = None
    decoded_with: int = Field(
        1, ge=1, description="How many sample requests shared this one's decode (itself included): continuous batching."
    )


Result = Annotated[
    CreateModelResult
    | LoadWeightsResult
    | ForwardBackwardResult
    | OptimStepResult
    | SaveWeightsResult
    | SaveForSamplerResult
    | SampleResult,
    Field(discriminator="kind"),
]
_RESULTS: TypeAdapter[Result] = TypeAdapter(Result)


def parse_result(data: object) -> Result:
    """The typed result ``data`` (as the API stored it, with its ``kind``) holds; ValidationError otherwise."""
    return _RESULTS.validate_python(data)


class RequestError(BaseModel):
    message: str
    category: Literal["user", "server"] = "server"


class ResultPost(BaseModel):
    """A request's outcome: its result (of the request's own kind), or the error it failed with."""

    claim_id: str
    result: Result | None = None
    error: RequestError | None = None
    device_seconds: float = Field(
        0.0, ge=0, description="How long the request held the worker's device (what a shared session is billed)."
    )
