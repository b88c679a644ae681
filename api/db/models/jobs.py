"""A managed job's tables: the job row and its events, with the job's states (``JobStatus`` and its groups) and
why a job is queued again (``ResumeReason``), each defined once.

Job status moves only through guarded UPDATEs (api.jobs.service, api.jobs.claims, api.jobs.leases), so a cancel
and a worker's write can never race into an impossible state."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.elements import ColumnElement

from api.db.models.base import Base, now


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
    # Its budget (api.billing.budgets): {"max_cost": …, "max_device_hours": …} (null: none), and the highest alert
    # sent for it ("warning" at 80 %, "reached" at the cap; null: none), raised by a guarded UPDATE so each is sent
    # once per budget (raising the budget clears it).
    budget: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    budget_alert: Mapped[str | None] = mapped_column(String(16))
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


def job_leased(t: int) -> list[ColumnElement[bool]]:
    """A job a worker holds at ``t``: active, its lease live, a worker named (the fleet view, the /metrics gauge)."""
    return [Job.status.in_(ACTIVE), Job.lease_expires_at >= t, Job.worker_id.is_not(None)]
