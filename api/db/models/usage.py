"""What each project used (api.usage.metering writes it, api.usage.service sums it)."""

from __future__ import annotations

import enum
import time

from sqlalchemy import BigInteger, Boolean, Float, Index, Integer, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base


class UsageKind(enum.StrEnum):
    """What a usage record meters (``UsageRecord.kind``): a job's attempt, an eval run's attempt, a training-API
    session, or a day of one project's inference on one model."""

    job = "job"
    eval = "eval"
    session = "session"
    inference = "inference"
    serving = "serving"  # an inference replica a worker started: the service's device time (api.inference.replicas)


class UsageRecord(Base):
    """What one attempt of one job (or one eval run, training-API session, or a day of inference on a model) used.

    One row per (kind, subject, attempt, day): an attempt's counters are cumulative and only ever raised, so a
    retried report or a resumed attempt re-reaching a step never counts twice, and a job's total is the sum of its
    attempts' rows. ``device_seconds`` is devices × the span from the claim to the attempt's last fenced contact,
    measured by the API (to the heartbeat's resolution). Written by api.usage.metering only; the unique key holds
    the project because an inference row's subject (a base model's name) is shared by every project.
    """

    __tablename__ = "usage_records"
    __table_args__ = (
        UniqueConstraint("kind", "project_id", "subject_id", "attempt", "day", name="uq_usage_records_subject"),
        Index("ix_usage_records_project_day", "project_id", "day"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "usage-…"
    project_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # job | eval | session | inference
    subject_id: Mapped[str] = mapped_column(String(512), index=True)  # ftjob-…, evalrun-…, a session, a model
    job_id: Mapped[str | None] = mapped_column(String(64), index=True)  # the job it belongs to, where there is one
    attempt: Mapped[int] = mapped_column(Integer, default=0)  # the lease epoch; 0 where there is none
    day: Mapped[str] = mapped_column(String(10))  # UTC "YYYY-MM-DD" of started_at
    device_kind: Mapped[str | None] = mapped_column(String(256))  # "NVIDIA H100 80GB HBM3", a CPU's model name
    devices: Mapped[int] = mapped_column(Integer, default=1)
    # the attempt shared its worker (a pool of tenants): device-seconds are its steps' own, not its wall-clock span
    shared: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    # Unix seconds with their fraction: device-seconds are their difference, and short attempts are common
    started_at: Mapped[float] = mapped_column(Float, default=time.time)
    last_seen_at: Mapped[float] = mapped_column(Float, default=time.time)
    device_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    steps: Mapped[int] = mapped_column(Integer, default=0)
    last_step: Mapped[int] = mapped_column(Integer, default=0)  # the newest step counted in this attempt
    sampled_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    trained_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    grader_calls: Mapped[int] = mapped_column(BigInteger, default=0)
    grader_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    # wall-clock seconds of the steps' phases (timing.step): what the estimate of a new job is calibrated from
    sampling_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    training_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    eval_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    eval_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    inference_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
