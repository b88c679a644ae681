"""What each attempt used, written as it happens (no FastAPI): the API's side of usage metering.

One ``UsageRecord`` per attempt (api.db.models): a job's claim opens its row (``start_attempt``), and every later
contact of that attempt's worker raises it. Counters are cumulative and only ever raised, each by one guarded
UPDATE, so the numbers add up across retries, resumes and nodes:

- device-seconds are measured by the API, not reported by the worker: every fenced contact (a heartbeat, an event
  post, a checkpoint, the finish) sets ``last_seen_at`` to now (Unix seconds with their fraction: a short attempt
  is not rounded to whole seconds) and ``device_seconds = devices × (last_seen_at − started_at)``, where
  ``devices`` is the job's devices per node × nodes (only node 0 holds the lease and talks to the API, so a
  multi-node attempt is one row, counted once). The error is at most one heartbeat interval per attempt: the time
  between an attempt's last contact and its death is not counted. An attempt that shares its worker with other
  jobs (a pool of tenants, worker.pool; ``shared``, set with its execution) is billed the work it caused instead,
  not the wall clock its tenants share: each step adds ``devices × (timing.full_iteration + timing.eval)``, the
  seconds its turn held the device (before its execution arrives, while it loads, the clock counts as for any
  attempt).
- a step's metrics event counts for the attempt that posted it when its step is beyond the attempt's
  ``last_step`` (a retried post never counts twice). A resumed attempt re-running the steps after its checkpoint
  counts them again: the device did that work, in another attempt (another row).
- the counters a step adds (``step_usage``), from its StepMetrics and the job's resolved hyperparameters:
  ``trained_tokens`` = ``tokens`` (the completion tokens of the batch the update trained on, EOS included: the
  job's own ``trained_tokens`` sums the same); ``sampled_tokens`` = ``tokens`` × samples scored / samples trained
  (every completion drawn, those that dynamic sampling or GFPO dropped included, at the trained batch's mean
  length: equal to ``tokens`` when nothing was dropped); ``grader_calls`` = samples scored × reward columns (each
  top-level grader once, a ``multi`` grader once), samples scored = ``sampling.groups_sampled`` ×
  (``gfpo_sample_size`` or ``group_size``); ``grader_seconds`` = ``timing.step.scoring`` (wall-clock seconds
  scoring the step's samples, over every sampling round); ``sampling_seconds``, ``training_seconds``,
  ``eval_seconds`` = the step's ``timing.step`` phases (what api.billing.estimate is calibrated from).

Eval runs (kind ``eval``), training-API sessions (``session``) and inference through the API (``inference``) are
metered by the same two writes (``open_attempt``, ``contact``); see ``Attempt``. A session claimed by a worker that
serves several at once (worker.training_api.pool: its claim says ``shared``) is billed the seconds its requests held
the device (``add_held``, from each result post) instead of its lease's wall clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.db.models import Job, UsageKind, UsageRecord, new_id
from api.db.session import rows_changed
from grpo_core.schemas.metrics import Execution, StepMetrics
from runtime.internal import MetricsEvent, Resources

log = logging.getLogger(__name__)


def day_of(t: float) -> str:
    """The UTC day of Unix time ``t``, as the ``day`` column holds it ("YYYY-MM-DD")."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class Attempt:
    """The row a contact writes to: (kind, project, subject, attempt), and for an inference row its day too
    (``day`` None: the attempt's one row, whatever day it started on). ``devices`` and ``job_id`` are what a new row
    is opened with."""

    kind: UsageKind
    project_id: str
    subject_id: str
    attempt: int
    devices: int = 1
    job_id: str | None = None
    day: str | None = None

    @classmethod
    def of_job(cls, job: Job) -> Attempt:
        """The job's current attempt (its lease epoch), on every device of every node."""
        res = Resources.model_validate(job.resources or {})
        return cls(UsageKind.job, job.project_id, job.id, job.lease_epoch, res.devices * res.nodes, job.id)


@dataclass(frozen=True)
class StepUsage:
    """What one optimizer step adds to its attempt's row (the module doc has each formula)."""

    sampled_tokens: int
    trained_tokens: int
    grader_calls: int
    grader_seconds: float


def step_usage(metrics: StepMetrics, hyperparameters: dict[str, Any]) -> StepUsage:
    """The counters of one step, from its metrics and the job's resolved hyperparameters."""
    group = int(hyperparameters.get("group_size") or 1)
    drawn = int(hyperparameters.get("gfpo_sample_size") or group)
    scored = metrics.sampling.groups_sampled * drawn
    trained = metrics.sampling.groups_trained * group
    sampled_tokens = round(metrics.tokens * scored / trained) if trained and scored > trained else metrics.tokens
    columns = sum(g.error_rate is not None for g in metrics.scores.graders)  # a multi grader's parts report none
    return StepUsage(
        sampled_tokens=sampled_tokens,
        trained_tokens=metrics.tokens,
        grader_calls=scored * columns,
        grader_seconds=metrics.timing.step.scoring,
    )


def device_kind(execution: Execution) -> str:
    """What the attempt runs on, for the device-seconds by kind: the GPU's name, or "cpu (model name)"."""
    return kind_of(execution.device, execution.device_name)


def kind_of(device: str, device_name: str) -> str:
    """The device kind of ``device`` ("cuda:0", "cpu") named ``device_name``: the GPU's name, or "cpu (model name)"
    (an attempt's execution, an inference replica's report)."""
    if device.startswith("cuda"):
        return device_name
    return f"cpu ({device_name})" if device_name else "cpu"


def _where(a: Attempt) -> list[ColumnElement[bool]]:
    cond = [
        UsageRecord.kind == a.kind,
        UsageRecord.subject_id == a.subject_id,
        UsageRecord.attempt == a.attempt,
        UsageRecord.project_id == a.project_id,
    ]
    return cond + ([UsageRecord.day == a.day] if a.day is not None else [])


def open_attempt(session: Session, a: Attempt) -> None:
    """The attempt's row, opened now (nothing used yet); a row already there is kept as it is (a retried claim, or
    two contacts racing to open a row missing since before metering)."""
    _open(session, a, time.time())


def _open(session: Session, a: Attempt, t: float) -> None:
    row = UsageRecord(
        id=new_id("usage"),
        project_id=a.project_id,
        kind=a.kind,
        subject_id=a.subject_id,
        job_id=a.job_id,
        attempt=a.attempt,
        day=a.day or day_of(t),
        devices=a.devices,
        started_at=t,
        last_seen_at=t,
        device_seconds=0.0,
        steps=0,
        last_step=0,
        sampled_tokens=0,
        trained_tokens=0,
        grader_calls=0,
        grader_seconds=0.0,
        eval_tokens=0,
        inference_tokens=0,
        sampling_seconds=0.0,
        training_seconds=0.0,
        eval_seconds=0.0,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # opened meanwhile (the unique key): that row stands
        pass


def touch(session: Session, a: Attempt, t: float, **add: float) -> bool:
    """One UPDATE of the attempt's row: ``last_seen_at`` raised to ``t`` (never lowered: API processes' clocks
    differ a little), device-seconds from it (never lowered either, like every counter), and ``add``'s counters
    added. False when there is no row."""
    seen = case((UsageRecord.last_seen_at < t, t), else_=UsageRecord.last_seen_at)
    span = UsageRecord.devices * (seen - UsageRecord.started_at)
    raise_to_span = and_(UsageRecord.shared.is_(False), span > UsageRecord.device_seconds)  # a shared row: its steps'
    values: dict[str, Any] = {
        "last_seen_at": seen,
        "device_seconds": case((raise_to_span, span), else_=UsageRecord.device_seconds),
    }
    values |= {name: getattr(UsageRecord, name) + n for name, n in add.items()}
    statement = update(UsageRecord).where(*_where(a)).values(**values)
    return rows_changed(session, statement.execution_options(synchronize_session=False)) > 0


def contact(session: Session, a: Attempt, **add: float) -> None:
    """``touch`` now, opening the row first where there is none (an attempt that began before metering, or an
    inference row's first request of the day). Metering reads its own clock, to the fraction of a second, for
    every write: its callers' ``now()`` is whole seconds."""
    _contact(session, a, time.time(), **add)


def _contact(session: Session, a: Attempt, t: float, **add: float) -> None:
    if not touch(session, a, t, **add):
        _open(session, a, t)
        touch(session, a, t, **add)


def start_attempt(session: Session, job: Job, worker_id: str) -> None:
    """Open the row of the attempt a claim just began (``job.lease_epoch`` is the new epoch), in the claim's
    transaction. ``worker_id`` is the claiming worker (node 0 of a multi-node attempt), logged."""
    a = Attempt.of_job(job)
    open_attempt(session, a)
    log.debug("metering attempt %d of %s on %s (%d devices)", a.attempt, job.id, worker_id, a.devices)


def contact_job(session: Session, job: Job) -> None:
    """A fenced contact of the job's current attempt (api.jobs.leases.fence, after its guarded UPDATE held): one
    UPDATE; the row is opened here where the attempt was claimed before metering was deployed (measured from then)."""
    contact(session, Attempt.of_job(job))


def count_steps(session: Session, job: Job, events: list[MetricsEvent]) -> None:
    """Add the posted steps beyond the attempt's ``last_step`` to its row: one guarded UPDATE a step (ascending), so
    a retried post, or two posts racing, count each step of the attempt once."""
    hp, attempt = job.reinforcement.hyperparameters, Attempt.of_job(job)
    for ev in sorted(events, key=lambda e: e.step):
        u = step_usage(ev.data, hp)
        timing = ev.data.timing.step
        held = UsageRecord.devices * (timing.full_iteration + (timing.eval or 0.0))  # what the step's turn held
        session.execute(
            update(UsageRecord)
            .where(*_where(attempt), UsageRecord.last_step < ev.step)
            .values(
                device_seconds=case(
                    (UsageRecord.shared.is_(True), UsageRecord.device_seconds + held), else_=UsageRecord.device_seconds
                ),
                steps=UsageRecord.steps + 1,
                last_step=ev.step,
                sampled_tokens=UsageRecord.sampled_tokens + u.sampled_tokens,
                trained_tokens=UsageRecord.trained_tokens + u.trained_tokens,
                grader_calls=UsageRecord.grader_calls + u.grader_calls,
                grader_seconds=UsageRecord.grader_seconds + u.grader_seconds,
                sampling_seconds=UsageRecord.sampling_seconds + timing.sampling,
                training_seconds=UsageRecord.training_seconds + timing.training,
                eval_seconds=UsageRecord.eval_seconds + (timing.eval or 0.0),
            )
            .execution_options(synchronize_session=False)
        )


def add_seconds(session: Session, a: Attempt, t: float, seconds: float, device_kind: str | None) -> None:
    """Add ``seconds`` of one device to ``a``'s row (opened, as shared, by the first): what a row summed from
    several sources' reports is billed (an inference replica's heartbeats: api.inference.replicas), not its span."""
    statement = (
        update(UsageRecord)
        .where(*_where(a))
        .values(
            device_seconds=UsageRecord.device_seconds + seconds,
            last_seen_at=case((UsageRecord.last_seen_at < t, t), else_=UsageRecord.last_seen_at),
            **({"device_kind": device_kind} if device_kind else {}),
        )
    )
    if not rows_changed(session, statement.execution_options(synchronize_session=False)):
        _open(session, a, t)
        mark_shared(session, a)
        session.execute(statement.execution_options(synchronize_session=False))


def mark_shared(session: Session, a: Attempt) -> None:
    """The attempt shares its worker with others (a pool of training sessions): from now on its device-seconds are
    what its requests held (``add_held``), not its wall clock."""
    statement = update(UsageRecord).where(*_where(a)).values(shared=True)
    session.execute(statement.execution_options(synchronize_session=False))


def add_held(session: Session, a: Attempt, seconds: float) -> None:
    """Add the ``seconds`` a request of a shared attempt held the device (a request's result is stored once, so
    its seconds count once); an attempt that is not shared is billed its wall clock instead, and this adds
    nothing."""
    statement = (
        update(UsageRecord)
        .where(*_where(a), UsageRecord.shared.is_(True))
        .values(device_seconds=UsageRecord.device_seconds + UsageRecord.devices * seconds)
    )
    session.execute(statement.execution_options(synchronize_session=False))


def record_device(session: Session, job_id: str, epoch: int, execution: Execution) -> None:
    """The attempt's device kind, from what its worker resolved (api.jobs.leases.record_execution), and whether it
    shares the worker (a pool: its device-seconds from then on are its steps' own, ``count_steps``)."""
    session.execute(
        update(UsageRecord)
        .where(UsageRecord.kind == UsageKind.job, UsageRecord.subject_id == job_id, UsageRecord.attempt == epoch)
        .values(device_kind=device_kind(execution)[:256], shared=execution.pool_tenants is not None)
        .execution_options(synchronize_session=False)
    )


def answer_tokens(usage: dict[str, Any]) -> int:
    """The tokens of one answer (an inference answer, an eval item's sample), from its OpenAI ``usage``: its
    ``total_tokens``, or prompt + completion tokens; 0 where it says nothing readable."""
    try:
        total = usage.get("total_tokens")
        return int(total or int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0))
    except (TypeError, ValueError):
        return 0


def count_inference(sessionmaker: Callable[[], Session], project_id: str, model: str, tokens: int) -> None:
    """Add an answer's tokens to the project's inference row of ``model`` for today (opened by the day's first):
    the inference server is shared, so no device-seconds are attributed (``devices`` 0)."""
    t = time.time()
    a = Attempt(UsageKind.inference, project_id, model[:512], 0, devices=0, day=day_of(t))
    with sessionmaker() as session:
        _contact(session, a, t, inference_tokens=tokens)  # the day's row, at the time that named the day
        session.commit()
