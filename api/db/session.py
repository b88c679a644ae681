"""Engine and session factory. SQLite (the embedded default) gets WAL, a busy timeout and foreign keys."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, Delete, Engine, Update, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def rows_changed(session: Session, statement: Update | Delete) -> int:
    """Run a guarded UPDATE or DELETE and say how many rows it changed (1: the guard held, 0: something else
    changed the row first). Every state transition reads its outcome this way."""
    return cast(CursorResult[Any], session.execute(statement)).rowcount
