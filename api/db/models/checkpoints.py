"""Checkpoints' tables: a job's (``Checkpoint``, one per registered step) and a training run's
(``TrainingCheckpoint``, one per ``tinker://`` path). Both are registered, listed and downloaded by api.checkpoints."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


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
