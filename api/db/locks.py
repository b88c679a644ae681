"""Transaction-scoped locks that serialise a check-then-write across API processes (a quota: count, then insert).

Without one, two processes (or two threadpool threads of one) can both count N < quota and both insert, leaving
N + 2. ``hold_project_lock`` makes the second wait until the first has committed or rolled back; its count then
sees the first one's row. Take it just before the count, as late as the transaction allows: it is held until
the commit.

- PostgreSQL: ``pg_advisory_xact_lock`` on a 64-bit hash of (purpose, project). Advisory, so it blocks nothing
  but other holders of the same lock: not the project's uploads, reads or workers (a ``SELECT … FOR UPDATE`` on
  the project row would also stall every insert whose foreign key points at it). A hash collision between two
  projects only makes them queue behind each other. Released by COMMIT or ROLLBACK, never leaked by a crash.
  The count after it sees the first one's row because each statement under READ COMMITTED (PostgreSQL's
  default, which this service keeps) reads a fresh snapshot; under REPEATABLE READ it would not.
- SQLite (the embedded default): the database has one writer at a time, but pysqlite starts a transaction only
  at the first write, so a count made before it reads outside any transaction and races all the same. A write
  that changes nothing (``UPDATE projects … WHERE id = :project``, matching or not) begins the transaction and
  takes the write lock first; the count after it reads the latest commit. Other writers wait on the busy
  timeout meanwhile, which this database's single writer means anyway.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.orm import Session


def lock_key(purpose: str, project_id: str) -> int:
    """A signed 64-bit key (PostgreSQL's ``bigint``), stable across processes and Python versions (not
    ``hash()``, which is salted per process)."""
    digest = hashlib.sha256(f"rft:{purpose}:{project_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def hold_project_lock(session: Session, purpose: str, project_id: str) -> None:
    """Wait for, then hold until the transaction ends, the lock on ``purpose`` (e.g. ``job-quota``) of a project.
    Other databases: nothing (the service runs on these two)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key(purpose, project_id)})
    elif dialect == "sqlite":
        session.execute(text("UPDATE projects SET name = name WHERE id = :id"), {"id": project_id})
