"""Tables. Timestamps are Unix seconds (OpenAI's convention); ids are prefixed strings (file-…, ftjob-…).

Job status moves only through guarded UPDATEs in api.jobs.service, so a cancel and a worker's write can never
race into an impossible state.
"""

from __future__ import annotations

import enum
import functools
import secrets
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    inspect,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

DEFAULT_PROJECT = "proj-default"


def now() -> int:
    return int(time.time())


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}

    def columns(self) -> dict[str, Any]:
        """The row's column values by attribute name: what its response schema is validated from (each schema's
        ``from_row`` adds only the fields that are not a column of the same name)."""
        return {key: getattr(self, key) for key in _column_keys(type(self))}


@functools.cache
def _column_keys(cls: type[Base]) -> tuple[str, ...]:
    """A mapped class's column attribute names, looked up once (an event page converts 20 rows)."""
    return tuple(attr.key for attr in inspect(cls).column_attrs)


class JobStatus(enum.StrEnum):
    validating_files = "validating_files"
    queued = "queued"
    running = "running"
    cancelling = "cancelling"
    pausing = "pausing"  # the worker checkpoints at the next step boundary and frees itself
    paused = "paused"  # holds a checkpoint; POST /resume queues it again
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


TERMINAL = frozenset({JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled})
# Holding a worker (while its lease lives): what a fenced write needs, and what counts against a running limit.
ACTIVE = (JobStatus.running, JobStatus.cancelling, JobStatus.pausing)
# Holding a worker or waiting for one: what counts against a project's limit, and what keeps a base model in use.
UNFINISHED = (JobStatus.queued, JobStatus.running, JobStatus.cancelling, JobStatus.pausing)


class EvalRunStatus(enum.StrEnum):
    """An eval run's states (OpenAI's names for them, ``canceled`` with one l)."""

    queued = "queued"
    in_progress = "in_progress"
    completed = "completed"
    failed = "failed"
    canceled = "canceled"


# Waiting for a worker or held by one: a cancel still stops it, and its model is still in use.
EVAL_RUN_ACTIVE = (EvalRunStatus.queued, EvalRunStatus.in_progress)


class ResumeReason(enum.StrEnum):
    """Why a job that already ran is queued again: stored in ``Job.resume_reason`` by whatever queues it, said in
    the next attempt's first event ("Resumed from step 40 after a pause"), cleared by the claim."""

    paused = "after a pause"
    failed_attempt = "after a failed attempt"
    worker_shut_down = "after its worker shut down"
    preempted = "after it was preempted"  # a higher-priority job took its worker (api.jobs.scheduling)
    # never stored: a running job whose lease expired is claimed as it is (api.jobs.claims.take)
    worker_lost = "after worker loss"

    @classmethod
    def parse(cls, stored: str | None) -> ResumeReason | None:
        """The column's value (None: the job's first run)."""
        return None if stored is None else cls(stored)


@dataclass(frozen=True)
class ReinforcementSpec:
    """A job's stored ``method.reinforcement`` (api.jobs.schemas.ReinforcementMethod as validated at creation, the
    hyperparameters fully resolved), as the JSON the worker receives in its claim."""

    grader: dict[str, Any]
    hyperparameters: dict[str, Any]
    environment: dict[str, Any] | None


class File(Base):
    __tablename__ = "files"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    filename: Mapped[str] = mapped_column(String(512))
    purpose: Mapped[str] = mapped_column(String(32))
    bytes: Mapped[int] = mapped_column(BigInteger)
    row_count: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    object_key: Mapped[str] = mapped_column(String(1024))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class Job(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    model: Mapped[str] = mapped_column(String(256))
    training_file: Mapped[str] = mapped_column(ForeignKey("files.id"))
    validation_file: Mapped[str | None] = mapped_column(ForeignKey("files.id"))
    seed: Mapped[int] = mapped_column(BigInteger)
    suffix: Mapped[str | None] = mapped_column(String(64))
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON)
    method: Mapped[dict[str, Any]] = mapped_column(JSON)  # as submitted, hyperparameters fully resolved
    status: Mapped[str] = mapped_column(String(32), index=True)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # What the worker resolved the `auto` settings to (grpo_core.schemas.metrics.Execution); null until it starts.
    execution: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # OpenAI's integrations (runtime.internal.Integration list): where the worker mirrors the metrics; null: none.
    integrations: Mapped[list[Any] | None] = mapped_column(JSON)
    # The readiness probe's reports (api.jobs.readiness): {"before", "after", "comparison", "dropped_rows"}.
    readiness: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Devices per node and nodes (runtime.internal.Resources as JSON); null on rows from before it: 1 and 1.
    resources: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    fine_tuned_model: Mapped[str | None] = mapped_column(String(256))
    trained_tokens: Mapped[int | None] = mapped_column(BigInteger)
    total_steps: Mapped[int] = mapped_column(Integer)
    steps_done: Mapped[int] = mapped_column(Integer, default=0)
    # Worker lease: a claim bumps the epoch (fencing token); writes carrying an older epoch are refused.
    lease_epoch: Mapped[int] = mapped_column(Integer, default=0)
    lease_expires_at: Mapped[int | None] = mapped_column(BigInteger)
    worker_id: Mapped[str | None] = mapped_column(String(256))
    # Which claim holds the lease: a worker retrying its own claim request gets the same lease back.
    claim_id: Mapped[str | None] = mapped_column(String(64))
    # A multi-node attempt's rendezvous (api.jobs.rendezvous): where the claiming node's torchrun listens, and
    # the worker ids that joined, in node-rank order (rank i + 1). Each claim (a new epoch) clears both.
    rendezvous_endpoint: Mapped[str | None] = mapped_column(String(300))
    rendezvous_nodes: Mapped[list[Any] | None] = mapped_column(JSON)
    # Claims so far, and how many the job may use: infrastructure failures retry, user errors never do.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    max_attempts: Mapped[int] = mapped_column(Integer, default=3, server_default="3")
    # When the doorbell was last rung, and when the next retry may run (backoff); the reaper reads both.
    enqueued_at: Mapped[int | None] = mapped_column(BigInteger)
    not_before: Mapped[int | None] = mapped_column(BigInteger)
    # Why a job that already ran is queued again (a pause, a failed attempt, a worker that shut down), for the
    # next claim's event; set by whatever queues it again, cleared by the claim.
    resume_reason: Mapped[str | None] = mapped_column(String(64))
    # Scheduling (api.jobs.scheduling): higher priority runs first (up to the project's max_priority); a
    # preemptible job may be paused for a waiting higher-priority one, whose id ``preempted_by`` then holds.
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    preemptible: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    preempted_by: Mapped[str | None] = mapped_column(String(64))
    queued_at: Mapped[int | None] = mapped_column(BigInteger)  # when it last became queued: how long it waits
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    started_at: Mapped[int | None] = mapped_column(BigInteger)
    finished_at: Mapped[int | None] = mapped_column(BigInteger)

    @property
    def reinforcement(self) -> ReinforcementSpec:
        """The job's method, read in one place (the column holds OpenAI's ``{"type", "reinforcement": {…}}``)."""
        rl = self.method["reinforcement"]
        return ReinforcementSpec(rl["grader"], rl["hyperparameters"], rl.get("environment"))


class JobEvent(Base):
    __tablename__ = "job_events"
    __table_args__ = (
        # One metrics event per step: a retried post can never duplicate a point of the curve.
        Index(
            "uq_job_events_metrics_step",
            "job_id",
            "step",
            unique=True,
            sqlite_where=text("type = 'metrics'"),
            postgresql_where=text("type = 'metrics'"),
        ),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    level: Mapped[str] = mapped_column(String(8), default="info")
    type: Mapped[str] = mapped_column(String(16), default="message")
    message: Mapped[str] = mapped_column(Text)
    step: Mapped[int | None] = mapped_column(Integer)
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    __table_args__ = (UniqueConstraint("job_id", "step_number"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    step_number: Mapped[int] = mapped_column(Integer)
    object_key: Mapped[str] = mapped_column(String(1024))  # the adapter tar users download
    state_key: Mapped[str | None] = mapped_column(String(1024))  # optimizer/RNG state for an exact resume
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class IdempotencyKey(Base):
    """Stripe-style idempotency: the first response to (project, key) is replayed for the same request."""

    __tablename__ = "idempotency_keys"

    project_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    method_path: Mapped[str] = mapped_column(String(300))
    request_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the body (and file bytes for uploads)
    status_code: Mapped[int | None] = mapped_column(Integer)  # None while the first request is in flight
    response: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now, index=True)


class WebhookEndpoint(Base):
    """Where a project's job events are delivered (Standard Webhooks: signed with this endpoint's secret)."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    url: Mapped[str] = mapped_column(String(2048))
    secret: Mapped[str] = mapped_column(String(128))  # "whsec_" + base64, shown once at creation
    event_types: Mapped[list[Any]] = mapped_column(JSON)
    disabled: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class WebhookDelivery(Base):
    """One event for one endpoint, retried with backoff until delivered or given up; attempts are listed."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # also the webhook-id header (dedupe key)
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), index=True)
    job_id: Mapped[str | None] = mapped_column(String(64), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)  # pending|delivered|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[int] = mapped_column(BigInteger, default=now)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    history: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [{"at", "status_code", "error"}]
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    delivered_at: Mapped[int | None] = mapped_column(BigInteger)


class Project(Base):
    """A tenant: every file, job and webhook endpoint belongs to one, and an API key opens exactly one."""

    __tablename__ = "projects"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "proj-…"; DEFAULT_PROJECT is seeded
    name: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    # The fleet's share (api.jobs.scheduling), set by an admin: fair-share weight (twice the weight, twice the
    # device-time), the highest job priority it may ask for, its running-job limit (null: the service default).
    share_weight: Mapped[float] = mapped_column(Float, default=1.0, server_default="1")
    max_priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    max_running_jobs: Mapped[int | None] = mapped_column(Integer)


class ApiKey(Base):
    """A project's API key. Only its SHA-256 is stored: the key itself is shown once, when it is created."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "key-…": what admins list and revoke
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    name: Mapped[str | None] = mapped_column(String(256))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)  # sha256 hex of the whole key
    hint: Mapped[str] = mapped_column(String(32))  # "rft_…abcd": enough to recognise a key, useless to use it
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    last_used_at: Mapped[int | None] = mapped_column(BigInteger)  # refreshed at most once a minute
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)


class RegisteredModel(Base):
    """A base model in the registry (api.models.service): its files live in the object store under
    ``object_prefix``, one row of metadata here. Workers fetch it by ``digest`` into their node's cache."""

    __tablename__ = "base_models"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)  # what jobs name as `model`
    source: Mapped[str] = mapped_column(String(1024))  # where it was registered from (a folder, s3://…, hf://…)
    hub_id: Mapped[str | None] = mapped_column(String(256))  # "org/name": what a trained adapter names as its base
    architecture: Mapped[str] = mapped_column(String(128))
    model_type: Mapped[str] = mapped_column(String(64))
    parameter_count: Mapped[int | None] = mapped_column(BigInteger)
    dtype: Mapped[str | None] = mapped_column(String(32))
    context_length: Mapped[int | None] = mapped_column(Integer)
    chat_template: Mapped[bool] = mapped_column(Boolean)
    license: Mapped[str | None] = mapped_column(Text)
    files: Mapped[list[Any]] = mapped_column(JSON)  # [{"name", "size", "sha256"}]
    digest: Mapped[str] = mapped_column(String(64), index=True)  # grpo_core.models.files.manifest_digest
    size: Mapped[int] = mapped_column(BigInteger)
    object_prefix: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class Eval(Base):
    """An eval (OpenAI's ``eval``): what items look like and the testing criteria that grade a run's samples."""

    __tablename__ = "evals"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "eval_…"
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str | None] = mapped_column(String(256))
    data_source_config: Mapped[dict[str, Any]] = mapped_column(JSON)
    testing_criteria: Mapped[list[Any]] = mapped_column(JSON)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class EvalRun(Base):
    """One run of an eval on a model (OpenAI's ``eval.run``), executed by a worker from the jobs' queue."""

    __tablename__ = "eval_runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "evalrun_…"
    eval_id: Mapped[str] = mapped_column(ForeignKey("evals.id"), index=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str | None] = mapped_column(String(256))
    model: Mapped[str] = mapped_column(String(512))  # as requested: a base, fine-tuned or checkpoint name
    data_source: Mapped[dict[str, Any]] = mapped_column(JSON)
    target: Mapped[dict[str, Any]] = mapped_column(JSON)  # the resolved model: base id and adapter object key
    file_key: Mapped[str] = mapped_column(String(1024))
    status: Mapped[str] = mapped_column(String(32), index=True)  # EvalRunStatus
    result_counts: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    per_testing_criteria_results: Mapped[list[Any] | None] = mapped_column(JSON)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON)
    claim_id: Mapped[str | None] = mapped_column(String(64))  # the worker run that holds it (fences its writes)
    lease_expires_at: Mapped[int | None] = mapped_column(BigInteger)  # renewed by every post of items
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # claims so far (the reaper gives up after 3)
    enqueued_at: Mapped[int | None] = mapped_column(BigInteger)  # when the doorbell was last rung
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    started_at: Mapped[int | None] = mapped_column(BigInteger)
    finished_at: Mapped[int | None] = mapped_column(BigInteger)


class EvalOutputItem(Base):
    """One item of a run (OpenAI's ``eval.run.output_item``): its samples and each criterion's result."""

    __tablename__ = "eval_output_items"
    __table_args__ = (UniqueConstraint("run_id", "datasource_item_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "outputitem_…"
    run_id: Mapped[str] = mapped_column(ForeignKey("eval_runs.id"), index=True)
    datasource_item_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))  # pass, fail, error
    result: Mapped[dict[str, Any]] = mapped_column(JSON)  # grpo_core.evaluation.evals.ItemResult
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class TrainingSessionStatus(enum.StrEnum):
    """A training session (the ``tinker`` SDK's ServiceClient): ``active`` while its client may send work; the
    worker holding it (``claim_id``) keeps its models resident. ``finished``: the client closed it; ``expired``: no
    request for the idle timeout, so its worker handed the device back; ``lost``: its worker stopped renewing the
    lease. Requests to a session that is not active are refused, saying which of these it is."""

    active = "active"
    finished = "finished"
    expired = "expired"
    lost = "lost"


class TrainingRequestStatus(enum.StrEnum):
    pending = "pending"
    running = "running"
    done = "done"
    failed = "failed"


class TrainingSession(Base):
    """One client session of the training API (api.training): what a worker leases to hold its models."""

    __tablename__ = "training_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "sess-…"
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)  # TrainingSessionStatus
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    user_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    sdk_version: Mapped[str | None] = mapped_column(String(64))
    next_seq: Mapped[int] = mapped_column(BigInteger, default=0)  # the order requests reach the worker in
    claim_id: Mapped[str | None] = mapped_column(String(64))  # the worker run that holds it (fences its writes)
    worker_id: Mapped[str | None] = mapped_column(String(256))
    # set only while a worker holds it: the reaper finds expired leases by this index, not among every session
    lease_expires_at: Mapped[int | None] = mapped_column(BigInteger, index=True)
    enqueued_at: Mapped[int | None] = mapped_column(BigInteger)  # when the doorbell was last rung
    heartbeat_at: Mapped[int | None] = mapped_column(BigInteger)  # the client's last heartbeat
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # why it is not active
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    finished_at: Mapped[int | None] = mapped_column(BigInteger)


class TrainingRun(Base):
    """A LoRA training client (the SDK's "training run"): id ``<session>:train:<n>``, as the SDK builds it."""

    __tablename__ = "training_runs"

    id: Mapped[str] = mapped_column(String(160), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("training_sessions.id"), index=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    base_model: Mapped[str] = mapped_column(String(128))
    lora: Mapped[dict[str, Any]] = mapped_column(JSON)  # rank, seed, train_mlp, train_attn, train_unembed
    user_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    last_request_at: Mapped[int] = mapped_column(BigInteger, default=now)


class SamplingSession(Base):
    """A sampling client: a base model, alone or with the adapter of a sampler checkpoint."""

    __tablename__ = "sampling_sessions"

    id: Mapped[str] = mapped_column(String(160), primary_key=True)  # "<session>:sample:<n>"
    session_id: Mapped[str] = mapped_column(ForeignKey("training_sessions.id"), index=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    base_model: Mapped[str] = mapped_column(String(128))
    checkpoint_id: Mapped[str | None] = mapped_column(String(64))  # a TrainingCheckpoint (kind sampler)
    snapshot_of: Mapped[str | None] = mapped_column(String(160))  # a run whose weights its worker kept for it
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class TrainingCheckpoint(Base):
    """A checkpoint a training client saved: ``training`` (weights and optimizer, for load_state) or ``sampler``
    (a PEFT adapter: sampling clients, /v1/chat/completions, download). Objects under the project's prefix."""

    __tablename__ = "training_checkpoints"
    __table_args__ = (UniqueConstraint("tinker_path"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "ftckpt-…"
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("training_runs.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # training | sampler
    name: Mapped[str] = mapped_column(String(256))
    tinker_path: Mapped[str] = mapped_column(String(512))  # tinker://<run>/<weights|sampler_weights>/<name>
    object_key: Mapped[str] = mapped_column(String(1024))
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class TrainingRequest(Base):
    """One call of a session (create_model, forward_backward, optim_step, sample, …): the future the client polls.
    The worker holding the session takes them in ``seq`` order and posts each result (or error) here."""

    __tablename__ = "training_requests"
    __table_args__ = (
        Index("ix_training_requests_session_status_seq", "session_id", "status", "seq"),
        Index("ix_training_requests_target_kind", "target", "kind"),
        # the SDK numbers each client's calls (seq_id) and retries a POST whose answer it lost: one request each
        UniqueConstraint("target", "client_seq"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "req-…": the future's request_id
    session_id: Mapped[str] = mapped_column(ForeignKey("training_sessions.id"))
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    client_seq: Mapped[int | None] = mapped_column(BigInteger)  # the SDK's seq_id of the call, when it sends one
    kind: Mapped[str] = mapped_column(String(32))  # runtime.training_contract.RequestKind
    target: Mapped[str | None] = mapped_column(String(160))  # the run or sampling session it acts on
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    # indexed: the reaper looks for the few open requests (pending, running) among every call ever made
    status: Mapped[str] = mapped_column(String(16), index=True)  # TrainingRequestStatus
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # a training step's, kept small for the series
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {"message", "category": user|server}
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    finished_at: Mapped[int | None] = mapped_column(BigInteger)
    # a forward_backward's or sample's result (per-token numbers, the large part) is dropped after this
    result_expires_at: Mapped[int | None] = mapped_column(BigInteger, index=True)


class TrainingRunMetrics(Base):
    """Metrics a client reports for one step of its own loop (a reward the service cannot see), merged by step."""

    __tablename__ = "training_run_metrics"

    run_id: Mapped[str] = mapped_column(ForeignKey("training_runs.id"), primary_key=True)
    step: Mapped[int] = mapped_column(Integer, primary_key=True)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
