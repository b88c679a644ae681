"""Engine and session factories. SQLite (the embedded default) gets WAL, a busy timeout and foreign keys.

Two kinds of session: ``make_sessionmaker``'s, one transaction per request as SQLAlchemy does by default, for
anything that writes; and ``make_read_sessionmaker``'s, in autocommit, for the routes that only read (the status
polls and event pages a running job gets): no ``BEGIN`` before their first query and no ``ROLLBACK`` when the
connection goes back to the pool, two round trips fewer per request (bench/api_load.py).
"""

from __future__ import annotations

import json
import select
from typing import Any, cast

import pydantic_core
from sqlalchemy import CursorResult, Delete, Engine, Update, create_engine, event, exc
from sqlalchemy.orm import Session, sessionmaker


def json_loads(data: str | bytes) -> Any:
    """JSON columns (a job's config, an event's metrics and rollouts) decoded by pydantic-core's parser: the same
    values as ``json.loads`` (tests/integration/test_db_sessions.py), in fewer instructions on every event page.
    Deeper than its nesting limit (200) a document goes to ``json.loads``."""
    try:
        return pydantic_core.from_json(data)
    except ValueError:
        return json.loads(data)


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, json_deserializer=json_loads
        )

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    # 30 connections at most, as before (10 kept + 20 overflow), now all kept once opened: a burst above 10
    # concurrent queries (the threadpool runs 40) opened overflow connections and closed them on return, and
    # reopened them for the next request, a new PostgreSQL backend each time — 500 in 15 s when the API fell
    # behind (bench/api_load.py), which made it fall further behind.
    engine = create_engine(url, pool_size=30, max_overflow=0, json_deserializer=json_loads)
    event.listen(engine, "checkout", _drop_if_closed_by_server)
    return engine


def _drop_if_closed_by_server(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """Refuse a pooled connection whose socket has something to read: between requests an idle PostgreSQL
    connection receives nothing unless the server is ending it (a restart, ``pg_terminate_backend``, an idle
    timeout: a FATAL message, then the close). The pool then takes another or connects anew.

    In place of ``pool_pre_ping``, which sends a query and waits for its answer on every checkout: a round trip
    per request, spent on the one event this check sees without one. A server that vanished without closing
    its connections (its host lost) goes unseen by both until the query's TCP timeout.
    """
    poller = select.poll()  # not select.select: it fails on descriptors past 1023
    poller.register(dbapi_conn.fileno(), select.POLLIN)
    if poller.poll(0):  # readable, or hung up
        raise exc.DisconnectionError("the server closed this pooled connection")


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def make_read_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions for routes that only read: each statement commits on its own (the AUTOCOMMIT isolation level).

    Under PostgreSQL's READ COMMITTED, the default, each statement of a transaction reads its own snapshot
    anyway, so a read sees exactly what it saw inside a transaction. (SQLite's transactions keep one snapshot; in
    autocommit each statement reads the latest, which no read-only route depends on.) Writes that must commit
    together belong in ``make_sessionmaker``'s sessions; a single-statement write, such as an API key's
    ``last_used_at``, commits by itself here.
    """
    return sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False)


def rows_changed(session: Session, statement: Update | Delete) -> int:
    """Run a guarded UPDATE or DELETE and say how many rows it changed (1: the guard held, 0: something else
    changed the row first). Every state transition reads its outcome this way."""
    return cast(CursorResult[Any], session.execute(statement)).rowcount
