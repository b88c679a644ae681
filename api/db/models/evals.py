"""Evals, their runs and each run's items (api.evals), with a run's states (``EvalRunStatus``)."""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class EvalRunStatus(enum.StrEnum):
    """An eval run's states (OpenAI's names for them, ``canceled`` with one l)."""

    queued = "queued"
    in_progress = "in_progress"
    completed = "completed"
    failed = "failed"
    canceled = "canceled"


# Waiting for a worker or held by one: a cancel still stops it, and its model is still in use.
EVAL_RUN_ACTIVE = (EvalRunStatus.queued, EvalRunStatus.in_progress)


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
