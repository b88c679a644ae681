"""Sums of usage records (api.db.models.UsageRecord), for a project (``/v1/usage``), a page of jobs (their ``usage``
field) and the operator (``/v1/admin/usage``). One GROUP BY query each, whatever the number of buckets or jobs.

A record belongs to the day its attempt started (UTC; an inference record: its day), and the time filters match
that start: ``start_time <= started_at < end_time``. An attempt that runs past midnight stays whole in its first
day, so a day's bucket never holds half an attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from api.core.errors import InvalidRequest, NotFound
from api.db.models import Job, UsageKind, UsageRecord
from api.usage.prices import PriceBook, Prices
from api.usage.schemas import Cost, JobUsage, Usage, UsageBucket, UsagePage

UNKNOWN_DEVICE = "unknown"  # an attempt whose worker has not said what it runs on (yet)
DAY_SECONDS = 86_400
# the summed counters, in the order of the query's columns
COUNTERS = (
    "device_seconds",
    "steps",
    "sampled_tokens",
    "trained_tokens",
    "grader_calls",
    "grader_seconds",
    "eval_tokens",
    "inference_tokens",
    "sampling_seconds",
    "training_seconds",
    "eval_seconds",
)
FLOATS = {"device_seconds", "grader_seconds", "sampling_seconds", "training_seconds", "eval_seconds"}
Group = Literal["day", "job", "attempt", "project", "project_day"]
# a bucket's group: the columns it is grouped by, and the bucket's fields they fill
GROUPS: dict[Group, tuple[tuple[Any, ...], tuple[str, ...]]] = {
    "day": ((UsageRecord.day,), ("day",)),
    "job": ((UsageRecord.job_id,), ("job_id",)),
    "attempt": ((UsageRecord.job_id, UsageRecord.attempt), ("job_id", "attempt")),
    "project": ((UsageRecord.project_id,), ("project_id",)),
    "project_day": ((UsageRecord.project_id, UsageRecord.day), ("project_id", "day")),
}


@dataclass(frozen=True)
class UsageFilter:
    """Which records a sum covers: one project's (None: every project's, the admin view), started in
    [start_time, end_time), of one job, of one kind."""

    project_id: str | None
    start_time: int | None = None
    end_time: int | None = None
    job_id: str | None = None
    kind: UsageKind | None = None

    def check(self, session: Session) -> None:
        """400 naming the parameter for a range that is empty; 404 for a job that is not the project's (the same
        answer as for a job that never existed)."""
        if self.start_time is not None and self.end_time is not None and self.end_time <= self.start_time:
            raise InvalidRequest(
                f"end_time ({self.end_time}) must be after start_time ({self.start_time})", param="end_time"
            )
        if self.job_id is not None:
            owned = select(Job.id).where(Job.id == self.job_id)
            if self.project_id is not None:
                owned = owned.where(Job.project_id == self.project_id)
            if session.scalar(owned) is None:
                raise NotFound(f"no fine-tuning job with id {self.job_id!r}", param="job_id")

    def where(self) -> list[ColumnElement[bool]]:
        cond: list[ColumnElement[bool]] = []
        if self.project_id is not None:
            cond.append(UsageRecord.project_id == self.project_id)
        if self.start_time is not None:
            cond.append(UsageRecord.started_at >= self.start_time)
        if self.end_time is not None:
            cond.append(UsageRecord.started_at < self.end_time)
        if self.job_id is not None:
            cond.append(UsageRecord.job_id == self.job_id)
        if self.kind is not None:
            cond.append(UsageRecord.kind == self.kind)
        return cond


@dataclass
class _Sum:
    """One bucket's counters while the rows of its device kinds are added up."""

    values: dict[str, Any] = field(default_factory=lambda: {c: 0.0 if c in FLOATS else 0 for c in COUNTERS})
    by_kind: dict[str, float] = field(default_factory=dict)
    attempts: int = 0
    first: float | None = None
    last: float | None = None

    def add(self, kind: str | None, sums: Sequence[Any], attempts: int, first: float, last: float) -> None:
        for name, value in zip(COUNTERS, sums, strict=True):
            self.values[name] += float(value or 0) if name in FLOATS else int(value or 0)
        seconds = float(sums[0] or 0)
        if seconds:
            name = kind or UNKNOWN_DEVICE
            self.by_kind[name] = self.by_kind.get(name, 0.0) + seconds
        self.attempts += int(attempts or 0)
        self.first = first if self.first is None else min(self.first, first)
        self.last = last if self.last is None else max(self.last, last)

    def cost(self, prices: Prices) -> Cost:
        return prices.cost(self.by_kind, int(self.values["inference_tokens"]))

    def fields(self, prices: Prices | None = None) -> dict[str, Any]:
        cost = {"cost": self.cost(prices)} if prices is not None else {}
        return self.values | {"device_seconds_by_kind": self.by_kind, "attempts": self.attempts} | cost


def _sums(session: Session, keys: Sequence[Any], where: Sequence[ColumnElement[bool]]) -> dict[tuple[Any, ...], _Sum]:
    """The counters of the records matching ``where``, grouped by ``keys`` (columns): one query, grouped by the keys
    and the device kind, folded here (a handful of device kinds a bucket)."""
    r = UsageRecord
    attempts = func.sum(case((r.kind == UsageKind.job, 1), else_=0))
    query = (
        select(
            *keys,
            r.device_kind,
            *(func.sum(getattr(r, c)) for c in COUNTERS),
            attempts,
            func.min(r.started_at),
            func.max(r.last_seen_at),
        )
        .where(*where)
        .group_by(*keys, r.device_kind)
    )
    out: dict[tuple[Any, ...], _Sum] = {}
    n = len(keys)
    for row in session.execute(query):
        key = tuple(row[:n])
        kind, sums, (count, first, last) = row[n], row[n + 1 : n + 1 + len(COUNTERS)], row[-3:]
        out.setdefault(key, _Sum()).add(kind, sums, count, first, last)
    return out


def job_usage(session: Session, job_ids: Sequence[str], prices: Prices | None = None) -> dict[str, JobUsage]:
    """Each job's usage summed over its attempts (one query for a whole page of jobs), with its cost at ``prices``
    (the jobs' project's); a job that never ran has no entry."""
    if not job_ids:
        return {}
    where = [UsageRecord.kind == UsageKind.job, UsageRecord.job_id.in_(list(job_ids))]
    sums = _sums(session, [UsageRecord.job_id], where)
    return {key[0]: JobUsage.model_validate(s.fields(prices)) for key, s in sums.items()}


def session_usage(session: Session, session_ids: Sequence[str], prices: Prices) -> dict[str, JobUsage]:
    """Each training-API session's usage with its cost (one query); a session never claimed has no entry."""
    if not session_ids:
        return {}
    where = [UsageRecord.kind == UsageKind.session, UsageRecord.subject_id.in_(list(session_ids))]
    sums = _sums(session, [UsageRecord.subject_id], where)
    return {key[0]: JobUsage.model_validate(s.fields(prices)) for key, s in sums.items()}


def job_cost(session: Session, job_id: str, prices: Prices) -> Cost:
    """What a job cost so far, every attempt of it (one query)."""
    usage = job_usage(session, [job_id], prices).get(job_id)
    return usage.cost if usage is not None and usage.cost is not None else prices.cost({})


def spent(session: Session, project_id: str, since: float, prices: Prices) -> Cost:
    """What the project's records started at or after ``since`` cost (every kind: jobs, evals, sessions,
    inference)."""
    where = [UsageRecord.project_id == project_id, UsageRecord.started_at >= since]
    return _sums(session, [], where).get((), _Sum()).cost(prices)


def _day_start(day: str) -> int:
    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())


def _bucket(group: Group, key: tuple[Any, ...], s: _Sum, prices: Prices | None) -> UsageBucket:
    labels = dict(zip(GROUPS[group][1], key, strict=True))
    if "day" in labels:
        start = _day_start(labels["day"])
        span = {"start_time": start, "end_time": start + DAY_SECONDS}
    else:
        span = {"start_time": int(s.first or 0), "end_time": int(s.last or 0)}
    return UsageBucket.model_validate(s.fields(prices) | span | labels)


def usage_page(session: Session, f: UsageFilter, group: Group, limit: int, book: PriceBook) -> UsagePage:
    """The buckets of ``group`` (day, job, attempt, project, project_day) newest first (projects by id), at most
    ``limit``, and the totals of every record the filter matches, each with its cost at its project's prices in
    ``book`` (every bucket is one project's: the filter's, or the operator's per-project groups)."""
    f.check(session)
    sums = _sums(session, GROUPS[group][0], f.where())
    names = GROUPS[group][1]

    def prices(key: tuple[Any, ...]) -> Prices:
        project = f.project_id if f.project_id is not None else key[names.index("project_id")]
        return book.of(str(project))

    buckets = [_bucket(group, key, s, prices(key)) for key, s in sums.items()]
    if group == "project":
        buckets.sort(key=lambda b: b.project_id or "")
    else:
        buckets.sort(key=lambda b: (b.start_time, b.project_id or "", b.job_id or "", b.attempt or 0), reverse=True)
    total = _Sum()
    for s in sums.values():
        total.values = {c: total.values[c] + s.values[c] for c in COUNTERS}
        for kind, seconds in s.by_kind.items():
            total.by_kind[kind] = total.by_kind.get(kind, 0.0) + seconds
        total.attempts += s.attempts
    cost = _total_cost([b.cost for b in buckets if b.cost])
    if cost is None and not buckets and f.project_id is not None:
        cost = book.of(f.project_id).cost({})  # nothing used: 0 in the project's unit
    totals = Usage.model_validate(total.fields() | {"cost": cost})
    return UsagePage(data=buckets[:limit], has_more=len(buckets) > limit, totals=totals)


def _total_cost(costs: Sequence[Cost]) -> Cost | None:
    """The sum of the buckets' costs, where they are in one unit (projects priced apart from the rest: none)."""
    if len({c.unit for c in costs}) != 1:
        return None
    amount, hours = round(sum(c.amount for c in costs), 9), round(sum(c.device_hours for c in costs), 9)
    return Cost(amount=amount, unit=costs[0].unit, device_hours=hours)
