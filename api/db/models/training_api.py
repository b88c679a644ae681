"""The training API's tables (api.training_api): sessions, training runs, sampling clients, each call as a request
row, and the metrics a client reports (a run's checkpoints: api.db.models.checkpoints)."""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.elements import ColumnElement

from api.db.models.base import Base, now


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
    """One client session of the training API (api.training_api): what a worker leases to hold its models."""

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
    kind: Mapped[str] = mapped_column(String(32))  # runtime.training_api.RequestKind
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


def session_held(t: int) -> list[ColumnElement[bool]]:
    """A training session a worker holds at ``t``: active, claimed, its lease live (the fleet view, /metrics)."""
    return [
        TrainingSession.status == TrainingSessionStatus.active,
        TrainingSession.claim_id.is_not(None),
        TrainingSession.lease_expires_at >= t,
        TrainingSession.worker_id.is_not(None),
    ]
