"""The reads a running job is polled with, at the cost of one plain SQL statement each (api.db.raw): the job
row (status polls, the readiness report) and a page of its events.

An event never changes once written (appended by api.jobs.events.add_event, never updated), so each
process keeps the JSON it rendered for an event (``EventCache``, bounded in bytes) and a page is those strings
joined: validating and encoding an event page's metrics and rollouts had cost more CPU than its query
(docs/benchmarks.md, "The API under load"). The page's bytes are the same as FastAPI's encoding of
``ListResponse[JobEvent]`` (tests/unit/test_polls.py).

These are fast paths, not the only paths: each returns None where it found nothing (no such job, not the
caller's, an empty page, or a guard that no longer holds: api.core.callers), and the route then runs the ORM read,
which tells a 401 from a 404 from an empty page as before.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import pydantic_core
from pydantic import TypeAdapter
from sqlalchemy import JSON, Engine, inspect
from sqlalchemy.orm import Session

from api.checkpoints.service import CheckpointList, list_job_checkpoints
from api.core.callers import NO_GUARD, Caller, Guard
from api.core.pagination import Page
from api.db import models as db
from api.db.raw import fetch
from api.db.session import json_loads
from api.jobs import access, events, service
from api.jobs.schemas import COST, JobEvent
from grpo_core.schemas.metrics import StepMetrics

EVENT_CACHE_BYTES = 64 * 2**20  # ~40,000 events of a 1.7 kB metrics payload
_EVENT = TypeAdapter(JobEvent)


class RowView:
    """A job row read by plain SQL, with the attributes and ``columns()`` of the ORM's ``db.Job`` that
    ``Job.from_row`` and ``JobReadiness.from_row`` read."""

    reinforcement = db.Job.reinforcement  # the ORM row's typed view of the method, the same property

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)
        self._values = values

    def columns(self) -> dict[str, Any]:
        return dict(self._values)


def _job_columns() -> list[tuple[str, str, bool]]:
    """(attribute, column, is JSON) for each column of ``jobs``, in the mapper's order."""
    return [(a.key, a.columns[0].name, isinstance(a.columns[0].type, JSON)) for a in inspect(db.Job).column_attrs]


_JOB_COLUMNS = _job_columns()
_JOB_SELECT = ", ".join(f"CAST(j.{c} AS TEXT)" if is_json else f"j.{c}" for _, c, is_json in _JOB_COLUMNS)
_JOB_SQL = f"SELECT {_JOB_SELECT} FROM jobs j WHERE j.id = %(job)s AND j.project_id = %(project)s AND {{guard}}"
_EVENTS_SQL = (
    "SELECT e.id, e.created_at, e.level, e.message, e.type, CAST(e.data AS TEXT) FROM job_events e "
    "WHERE e.job_id = %(job)s AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = %(job)s AND j.project_id = %(project)s "
    "AND {guard}) {after}ORDER BY e.seq DESC LIMIT %(n)s"
)
_AFTER = "AND e.seq < (SELECT a.seq FROM job_events a WHERE a.id = %(after)s AND a.job_id = %(job)s) "


class EventCache:
    """Event id -> the event's JSON, least recently used out first past ``max_bytes``. Shared by the threadpool's
    threads, hence the lock (held for dictionary operations only, never while rendering)."""

    def __init__(self, max_bytes: int = EVENT_CACHE_BYTES) -> None:
        self.max_bytes, self.size = max_bytes, 0
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, event_id: str) -> bytes | None:
        with self._lock:
            hit = self._items.get(event_id)
            if hit is not None:
                self._items.move_to_end(event_id)
            return hit

    def put(self, event_id: str, body: bytes) -> None:
        with self._lock:
            old = self._items.pop(event_id, None)
            self.size += len(body) - (len(old) if old is not None else 0)
            self._items[event_id] = body
            while self.size > self.max_bytes and self._items:
                self.size -= len(self._items.popitem(last=False)[1])


def render_event(event: JobEvent) -> bytes:
    """One event as FastAPI encodes it in a response (pydantic's serializer, by alias)."""
    return _EVENT.dump_json(event, by_alias=True)


def render_page(items: list[bytes], ids: list[str], has_more: bool) -> bytes:
    """``ListResponse[JobEvent]``'s JSON around already rendered events, byte for byte as pydantic writes it."""
    first, last = pydantic_core.to_json(ids[0] if ids else None), pydantic_core.to_json(ids[-1] if ids else None)
    more = b"true" if has_more else b"false"
    return b'{"object":"list","data":[%s],"has_more":%s,"first_id":%s,"last_id":%s}' % (
        b",".join(items),
        more,
        first,
        last,
    )


class Polls:
    """The fast reads, on ``engine``'s pool, with this process's event cache."""

    def __init__(self, engine: Engine, events: EventCache | None = None) -> None:
        self.engine = engine
        self.events = events or EventCache()

    def job(self, project_id: str, job_id: str, guard: Guard = NO_GUARD) -> db.Job | None:
        """The caller's job row, or None (not found, not theirs, or the guard fails). Typed as the ORM's row, which
        it stands in for: it has each of its column attributes and ``columns()`` (not its relationships)."""
        sql, params = guard
        rows = fetch(self.engine, _JOB_SQL.format(guard=sql), {"job": job_id, "project": project_id, **params})
        if not rows:
            return None
        values = {
            k: (json_loads(v) if is_json and v is not None else v)
            for (k, _, is_json), v in zip(_JOB_COLUMNS, rows[0], strict=True)
        }
        return cast(db.Job, RowView(values))

    def event_page(
        self, project_id: str, job_id: str, *, limit: int, after: str | None, guard: Guard = NO_GUARD
    ) -> bytes | None:
        """A non-empty page of the job's events, newest first, as the response's JSON; None for anything else
        (an empty page, an unknown anchor, a job not found or not the caller's: the ORM path tells which)."""
        sql, params = guard
        query = _EVENTS_SQL.format(guard=sql, after=_AFTER if after else "")
        args = {"job": job_id, "project": project_id, "n": limit + 1, **params} | ({"after": after} if after else {})
        rows = fetch(self.engine, query, args)
        if not rows:
            return None
        page = rows[:limit]
        return render_page(
            [self._cached(r[0], partial(_event_of, r)) for r in page], [r[0] for r in page], len(rows) > limit
        )

    def render(self, rows: list[db.JobEvent], has_more: bool) -> bytes:
        """A page of ORM rows (the slow path's), rendered and cached as the fast path renders its own."""
        items = [self._cached(row.id, partial(JobEvent.from_row, row)) for row in rows]
        return render_page(items, [row.id for row in rows], has_more)

    def _cached(self, event_id: str, build: Callable[[], JobEvent]) -> bytes:
        """The event's JSON from the cache, or ``build()`` rendered and kept."""
        body = self.events.get(event_id)
        if body is None:
            body = render_event(build())
            self.events.put(event_id, body)
        return body


@dataclass
class JobReader:
    """The reads a running job is polled with, for one request: the route asks for a job, a page of its events, its
    checkpoints or the list of jobs, and gets the answer; how it is read stays here. A read takes one plain SQL
    statement when the process remembers the caller's key (``Caller``: the statement carries the guard), and the
    ORM read otherwise, which tells a 401 from a 404 from an empty page. Every read of a request runs on one
    autocommit session (api.core.deps.JobReaderDep), shared with the key lookup.
    """

    session: Session
    caller: Caller
    polls: Polls

    def job(self, job_id: str) -> db.Job:
        """The caller's job row (status polls, the readiness report), or 404."""
        return self.caller.read(
            self.session,
            lambda project, guard: self.polls.job(project, job_id, guard),
            lambda project: access.get_job(self.session, project, job_id),
        )

    def event_page(self, job_id: str, *, limit: int, after: str | None) -> bytes:
        """A page of the job's events, newest first, as the response's JSON."""

        def slow(project: str) -> bytes:
            page = events.list_events(self.session, project, job_id, limit=limit, after=after)
            return self.polls.render(page.items, page.has_more)

        def fast(project: str, guard: Guard) -> bytes | None:
            return self.polls.event_page(project, job_id, limit=limit, after=after, guard=guard)

        return self.caller.read(self.session, fast, slow)

    def jobs(self, *, limit: int, after: str | None, query: Iterable[tuple[str, str]]) -> Page[db.Job]:
        """The caller's jobs, newest first (api.jobs.service.list_jobs: ``query`` may hold a metadata filter)."""
        project = self.caller.verified(self.session)
        return service.list_jobs(self.session, project, limit=limit, after=after, query=query)

    def checkpoints(self, job_id: str, *, limit: int, after: str | None) -> CheckpointList:
        """The job's checkpoints, newest step first."""
        job = access.get_job(self.session, self.caller.verified(self.session), job_id)
        return list_job_checkpoints(self.session, job, limit=limit, after=after)


def _event_of(row: tuple[Any, ...]) -> JobEvent:
    """The event of a fast-path row (id, created_at, level, message, type, data as JSON text)."""
    event_id, created_at, level, message, type_, data = row
    # SQLAlchemy's JSON type stores None as JSON's null: 'null' as text, as the ORM reads it
    raw = None if data is None or data == "null" else json.loads(data)
    metrics = None if raw is None else StepMetrics.model_validate(raw)
    cost = None if raw is None else raw.get(COST)
    return JobEvent(
        id=event_id, created_at=created_at, level=level, message=message, type=type_, data=metrics, cost=cost
    )
