"""Plain SQL on a pooled driver connection, for the few reads that run on every poll of a job (api.jobs.polls).

Why not the ORM there: under load a status poll spent most of its CPU in SQLAlchemy rather than in the database
(bench/api_load.py; docs/benchmarks.md, "The API under load"). These reads are a few fixed statements, so they are
written once as SQL, and each has a test that it returns what the ORM query it stands in for returns
(tests/unit/test_polls.py); everything else stays on the ORM.

The SQL is written with pyformat parameters (``%(name)s``, psycopg's); for SQLite it is rewritten once to
``:name``. A connection is borrowed from the engine's pool and returned at once; on PostgreSQL it runs in
autocommit for the statement (no BEGIN/ROLLBACK round trips: under READ COMMITTED each statement reads its own
snapshot anyway, api.db.session.make_read_sessionmaker), and is put back as the pool lent it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

_PARAM = re.compile(r"%\((\w+)\)s")


@functools.cache
def _for_sqlite(sql: str) -> str:
    return _PARAM.sub(r":\1", sql)


def fetch(engine: Engine, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of one SELECT (pyformat parameters), on a connection from ``engine``'s pool."""
    sqlite = engine.dialect.name == "sqlite"
    conn = engine.raw_connection()
    ok = False
    try:
        driver: Any = conn.driver_connection  # psycopg's Connection (or sqlite3's): typed by neither here
        autocommit = None if sqlite else driver.autocommit
        if autocommit is False:
            driver.autocommit = True  # a client-side switch: no round trip when idle
        try:
            cur = conn.cursor()
            try:
                cur.execute(_for_sqlite(sql) if sqlite else sql, params)
                rows: list[tuple[Any, ...]] = list(cur.fetchall())
            finally:
                cur.close()
        finally:
            if autocommit is False:
                driver.autocommit = False
        ok = True
        return rows
    finally:
        if not ok:
            conn.invalidate()  # whatever failed (a lost server, mostly), the pool opens a fresh one next time
        conn.close()  # back to the pool (its reset finds no transaction open: nothing sent)
