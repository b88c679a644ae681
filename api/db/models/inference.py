"""The inference fleet's replicas (api.inference.replicas): the vLLM servers that serve a base model and its
adapters, whether an operator runs them (registered through the admin API) or a worker started one on demand."""

from __future__ import annotations

import enum
import time

from sqlalchemy import BigInteger, Float, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class ReplicaState(enum.StrEnum):
    """A replica's life. An operator's replica is ``ready`` from its registration (its health is the router's to
    judge); a started one goes requested -> starting (a worker claimed it) -> ready (its server answers) -> stopping
    (idle, or removed) -> stopped, or ``failed`` (its server did not start, or its worker went silent)."""

    requested = "requested"
    starting = "starting"
    ready = "ready"
    stopping = "stopping"
    stopped = "stopped"
    failed = "failed"


LIVE_REPLICA = (ReplicaState.requested, ReplicaState.starting, ReplicaState.ready)


class ReplicaOrigin(enum.StrEnum):
    admin = "admin"  # an operator's server (compose, a Kubernetes Deployment), registered by URL
    started = "started"  # started on demand by a worker (worker.serving), stopped when idle


class InferenceReplica(Base):
    """One inference server of one base model. ``url`` is its OpenAI-compatible base (``http://host:port/v1``),
    known once it is ready. A started replica is held by its worker like a lease: ``last_seen_at`` is its last
    heartbeat, and one silent for longer than the lease is gone (failed) whatever its state says. ``last_used_at``
    is the last request routed to it (written at most every few seconds), which its idle timeout counts from."""

    __tablename__ = "inference_replicas"
    __table_args__ = (Index("ix_inference_replicas_base_state", "base_model", "state"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "infr-…"
    base_model: Mapped[str] = mapped_column(String(256))
    origin: Mapped[str] = mapped_column(String(16))  # ReplicaOrigin
    state: Mapped[str] = mapped_column(String(16))  # ReplicaState
    url: Mapped[str | None] = mapped_column(String(512))
    worker_id: Mapped[str | None] = mapped_column(String(256))
    claim_id: Mapped[str | None] = mapped_column(String(64))
    device_kind: Mapped[str | None] = mapped_column(String(256))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    # Unix seconds with their fraction (the idle timeout and the lease are short)
    claimed_at: Mapped[float | None] = mapped_column(Float)
    ready_at: Mapped[float | None] = mapped_column(Float)
    last_seen_at: Mapped[float | None] = mapped_column(Float)
    last_used_at: Mapped[float] = mapped_column(Float, default=time.time)
    stopped_at: Mapped[float | None] = mapped_column(Float)
    stop_reason: Mapped[str | None] = mapped_column(String(256))
    error: Mapped[str | None] = mapped_column(Text)
