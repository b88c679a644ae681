"""The internal worker API, both sides of it: paths, request bodies and responses.

The API serves these under ``/internal/jobs`` (api.jobs.internal_routes, token-authenticated); the worker calls them
(worker.client.InternalClient) and gets these models back, not dicts. Every write after the claim carries the
lease epoch the claim returned (the fencing token): a stale one is refused with 409 ``stale_lease``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PlainSerializer, SecretStr, Tag

from grpo_core.evaluation.readiness import ReadinessReport
from grpo_core.schemas.graders import SECRET_NAME_PATTERN
from grpo_core.schemas.metrics import CheckpointMetrics, Execution, Level, StepMetrics

PREFIX = "/internal/jobs"
CLAIM_NEXT = "/claim-next"
CLAIM = "/{job_id}/claim"
HEARTBEAT = "/{job_id}/heartbeat"
EVENTS = "/{job_id}/events"
CHECKPOINTS = "/{job_id}/checkpoints"
FINISH = "/{job_id}/finish"
EXECUTION = "/{job_id}/execution"
RENDEZVOUS = "/{job_id}/rendezvous"
JOIN = "/{job_id}/join"
READINESS = "/{job_id}/readiness"


def url(path: str, job_id: str) -> str:
    """The full path of one of the routes above for ``job_id``."""
    return PREFIX + path.format(job_id=job_id)


class Refusal(StrEnum):
    """Why the worker API refused a request: the ``error.code`` of its 409s, raised by the API's worker side
    (api.jobs.leases, api.jobs.rendezvous, api.evals.leases) and matched by the worker (worker.client)."""

    # another worker owns the job now, or it is over: the worker stops quietly (STOP_QUIETLY)
    stale_lease = "stale_lease"  # not the job's current lease epoch, or the job is no longer active
    not_claimable = "not_claimable"  # finished, paused, out of attempts; or a join the attempt has no place for
    stale_claim = "stale_claim"  # an eval run this claim no longer holds
    # try again later: another worker's lease still lives, or the retry backoff runs (Retry-After says how long)
    lease_held = "lease_held"
    # the request itself contradicts the job's state: a bug or a race the worker reports as a failure
    already_finished = "already_finished"
    no_checkpoint = "no_checkpoint"  # "succeeded" without a registered checkpoint
    no_readiness_report = "no_readiness_report"  # a readiness-only job "succeeded" without its report
    single_node = "single_node"  # a rendezvous published for a one-node job
    rendezvous_published = "rendezvous_published"  # another endpoint for an attempt that already has one


STOP_QUIETLY = frozenset({Refusal.stale_lease, Refusal.not_claimable, Refusal.stale_claim})


# The worker stops at the next step boundary when an answer carries one of these; None: carry on. "preempt":
# checkpoint and hand the job back to the queue (a higher-priority job waits for this worker).
Stop = Literal["cancel", "pause", "preempt"]


class ClaimRequest(BaseModel):
    worker_id: str = Field(min_length=1, max_length=256)
    claim_id: str = Field(min_length=8, max_length=64, description="Random per run: a retried claim is idempotent.")


class ClaimNextRequest(BaseModel):
    """``POST /internal/jobs/claim-next``: a worker with a free slot asks for the next job it can run; the API
    chooses (api.jobs.scheduling)."""

    worker_id: str = Field(min_length=1, max_length=256)
    claim_id: str = Field(min_length=8, max_length=64, description="Random per run: a retried claim is idempotent.")
    devices: int | None = Field(None, ge=1, description="Devices this worker offers per node; None: any job's.")
    nodes: int | None = Field(None, ge=1, description="Nodes a job it claims may span; None: any.")
    pool: str | None = Field(
        None,
        max_length=4096,
        description="A worker with room in its pool of tenants: only a job that may share it, with this pool key "
        "(grpo_core.schemas.pooling.pool_key: the base model and the adapter's shape).",
    )


class ResumePoint(BaseModel):
    step: int
    adapter_key: str
    state_key: str


class Resources(BaseModel):
    """What one job trains on: ``nodes`` machines, each running ``devices`` training processes (ranks) under
    torchrun: one per GPU on a GPU worker, CPU processes on a CPU worker; ``rollout_devices`` of a node's devices may
    go to the sampler instead. World size = (devices - rollout_devices) × nodes."""

    model_config = ConfigDict(extra="forbid")

    devices: int = Field(
        1,
        ge=1,
        le=64,
        description="Training processes per node: one per GPU on a GPU worker (limit: MAX_DEVICES_PER_NODE).",
    )
    nodes: int = Field(
        1,
        ge=1,
        le=64,
        description="Machines the job spans (limit: MAX_NODES): the worker that claims the job is node 0, the others "
        "join its rendezvous.",
    )

    rollout_devices: int = Field(
        0,
        ge=0,
        le=63,
        description="Of the node's devices, how many the sampler takes for itself (disaggregated sampling; needs "
        "hyperparameters.max_staleness >= 1 and one node): it samples the coming batches there while the other "
        "devices train. On a GPU worker the sampler's own GPU; on a CPU worker that share of the cores. 0: the "
        "sampler shares the training device.",
    )

    @property
    def ranks_per_node(self) -> int:
        """Training processes on each node: the devices the sampler does not take."""
        return self.devices - self.rollout_devices

    @property
    def world_size(self) -> int:
        """Training processes (ranks) over all nodes."""
        return self.ranks_per_node * self.nodes


class WandbSpec(BaseModel):
    """OpenAI's ``integrations[].wandb``: where the job's W&B run goes."""

    model_config = ConfigDict(extra="forbid")

    project: str = Field(min_length=1, max_length=128)
    name: str | None = Field(None, max_length=128)
    entity: str | None = Field(None, max_length=128)
    tags: list[str] | None = Field(None, max_length=50)


DEFAULT_WANDB_PROJECT = "rft"


def reveal(value: SecretStr) -> str:
    """A secret's value, for the one place that needs it in the clear (the JSON of a claim on the wire)."""
    return value.get_secret_value()


# A secret's value in a claim: masked in every repr, str and python-mode dump (a log line, an exception, a debugger),
# written out in the clear only as JSON, which is the wire between the API and the worker that needs it. Whoever
# writes a claim to a file leaves it out (worker.launch.RankSpec).
ClaimSecret = Annotated[SecretStr, PlainSerializer(reveal, return_type=str, when_used="json")]


class Integration(BaseModel):
    """OpenAI's job ``integrations`` item (only ``wandb`` exists there), plus ``api_key_secret``: the project secret
    whose value is the W&B API key this job's run logs with (never the worker's own key then)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["wandb"]
    wandb: WandbSpec = Field(
        default_factory=lambda: WandbSpec(project=DEFAULT_WANDB_PROJECT),
        description=f"Where the run goes; default W&B project {DEFAULT_WANDB_PROJECT!r} of the key's default entity.",
    )
    api_key_secret: str | None = Field(
        None,
        pattern=SECRET_NAME_PATTERN,
        # without a secret the item is exactly OpenAI's (clients that compare or echo it see no extra key)
        exclude_if=lambda name: name is None,
        description="The name of a secret of the job's project (POST /v1/secrets) holding the W&B API key the run "
        "logs with; unset: the worker's own WANDB_API_KEY, or offline files on the worker without one.",
    )


class ModelFileRef(BaseModel):
    name: str
    size: int
    sha256: str


class ModelSource(BaseModel):
    """A registered base model's files in the object store: the worker fetches them into its node's cache,
    keyed by ``digest`` (worker.model_cache), and checks each file's sha256."""

    id: str
    digest: str
    object_prefix: str
    hub_id: str | None = None
    files: list[ModelFileRef]


class ClaimResponse(BaseModel):
    job_id: str
    epoch: int = Field(description="The fencing token every later write of this run carries.")
    lease_expires_at: int
    lease_seconds: int = Field(description="How long a heartbeat extends the lease (the worker beats well within).")
    model: str
    seed: int
    # Kept as JSON here and validated by the worker, so a spec this worker cannot run fails the job with a
    # clear message instead of failing to read the claim (after which the job could not even be reported).
    hyperparameters: dict[str, Any]
    grader: dict[str, Any]
    environment: dict[str, Any] | None = Field(
        None,
        description="The job's tools or respond() (grpo_core.schemas.environment.EnvironmentSpec); None: single-turn.",
    )
    training_file_key: str
    validation_file_key: str | None
    total_steps: int
    object_prefix: str = Field(description="Where this job's objects go: checkpoints under <prefix>checkpoints/.")
    resume: ResumePoint | None = Field(None, description="The last registered checkpoint to continue from.")
    resources: Resources = Field(default_factory=Resources, description="Devices per node and nodes of this job.")
    model_source: ModelSource | None = Field(
        None, description="The registered model's files; None: a folder of the worker's catalog (MODEL_CATALOG_DIR)."
    )
    integrations: list[Integration] = Field(default_factory=list, description="Where to mirror the metrics.")
    secrets: dict[str, ClaimSecret] = Field(
        default_factory=dict,
        description="The values of the project secrets this job's integrations and grader (a score_model grader's "
        "own judge) name, by name: only in the claim of the node that runs rank 0 (never in a join). A named "
        "secret missing here was deleted or cannot be decrypted: the worker fails the job saying which.",
    )
    readiness_dropped_rows: list[int] | None = Field(
        None,
        description="The rows an earlier attempt's readiness probe dropped (preflight.drop_zero_variance_prompts): a "
        "resumed attempt trains on the same rows without probing again; None: no probe has reported yet.",
    )


class ClaimNextResponse(BaseModel):
    claim: ClaimResponse | None = Field(description="The job to run; null: nothing this worker can run now.")


class Fenced(BaseModel):
    epoch: int


class HeartbeatResponse(BaseModel):
    status: str
    stop: Stop | None = Field(None, description="Stop at the next step boundary, and why.")
    lease_expires_at: int


class MessageEvent(BaseModel):
    """A line of the job's event log."""

    type: Literal["message"] = "message"
    level: Level = "info"
    message: str
    step: int | None = None


class MetricsEvent(BaseModel):
    """One step's metrics; a retried post of a step already recorded is skipped."""

    type: Literal["metrics"] = "metrics"
    level: Level = "info"
    message: str
    step: int
    data: StepMetrics

    @classmethod
    def of(cls, metrics: StepMetrics) -> MetricsEvent:
        return cls(message=metrics.message(), step=metrics.step, data=metrics)


def _event_type(value: Any) -> str:
    """The union's tag; an event posted without ``type`` is a message (the common case)."""
    if isinstance(value, dict):
        return str(value.get("type", "message"))
    return str(getattr(value, "type", "message"))


EventIn = Annotated[
    Annotated[MessageEvent, Tag("message")] | Annotated[MetricsEvent, Tag("metrics")], Discriminator(_event_type)
]


class EventsRequest(Fenced):
    events: list[EventIn] = Field(max_length=1000)


class EventsResponse(BaseModel):
    added: int
    stop: Stop | None = Field(None, description="Stop at the next step boundary, and why.")


class ExecutionRequest(Fenced):
    """Where and how this attempt trains (the ``auto`` settings resolved); the job object shows it."""

    execution: Execution


class ReadinessRequest(Fenced):
    """A readiness probe's report: ``before`` training (with the rows dropped for lack of signal, if asked) or
    ``after`` it (the API compares it with the one before, per prompt)."""

    phase: Literal["before", "after"]
    report: ReadinessReport
    dropped_rows: list[int] = Field(default_factory=list)


class CheckpointRequest(Fenced):
    step_number: int = Field(ge=0)
    object_key: str
    state_key: str | None = None
    metrics: CheckpointMetrics = Field(default_factory=CheckpointMetrics)


class CheckpointResponse(BaseModel):
    id: str


class FinishStatus(StrEnum):
    """How a worker's run of a job ended. Four are the job's next state (api.db.models.JobStatus, the same names);
    ``preempted`` is not a state: the job goes back to ``queued`` (api.jobs.leases.finish_job)."""

    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"
    paused = "paused"
    preempted = "preempted"


class FinishRequest(Fenced):
    status: FinishStatus = Field(
        description="preempted: the worker is shutting down and stopped at a step boundary after saving a "
        "checkpoint; the job goes back to the queue without using up an attempt."
    )
    retryable: bool = Field(False, description="An infrastructure failure: re-queue while attempts remain.")
    error_code: str | None = None
    error_message: str | None = None
    trained_tokens: int | None = None


class FinishResponse(BaseModel):
    status: str


class RendezvousRequest(Fenced):
    """The claiming worker of a multi-node job (``resources.nodes`` > 1) publishes where its torchrun hosts the
    c10d rendezvous store; the API then rings ``nodes - 1`` join doorbells (runtime.queue.JOIN_JOB)."""

    endpoint: str = Field(min_length=3, max_length=300, description="host:port other nodes reach.")


class JoinRequest(Fenced):
    """A worker that received a join doorbell asks to become one of the job's other nodes for this epoch."""

    worker_id: str = Field(min_length=1, max_length=256)


class JoinResponse(BaseModel):
    """A place in the job's current attempt: the spec (as the claim gave it), the rendezvous endpoint, and this
    node's rank (1 … nodes - 1; the claiming node is 0). A join beyond ``nodes - 1``, for an older epoch, or once
    the attempt is over is refused with 409 ``not_claimable``."""

    job: ClaimResponse
    endpoint: str
    node_rank: int = Field(ge=1)
