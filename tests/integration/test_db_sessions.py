"""The API's sessions on PostgreSQL (api.db.session): read sessions in autocommit that hand their connection back
ready for a transaction, pooled connections the server ended replaced without an error (the readable-socket check
that stands in for ``pool_pre_ping``), and an open event stream that holds no connection."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.pq import TransactionStatus
from sqlalchemy import Engine, text

from api.core.settings import ApiSettings
from api.db.raw import fetch
from api.db.session import make_engine, make_read_sessionmaker, make_sessionmaker
from api.main import create_app
from tests.integration.flow import submit
from tests.services import PG, fresh_database, fresh_redis_db
from tests.unit.test_polls import assert_polls_match_the_orm

pytestmark = pytest.mark.integration


def backend_pid(engine: Engine) -> int:
    with engine.connect() as c:
        return int(c.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def test_a_read_session_runs_without_a_transaction_and_a_write_session_still_gets_one(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        with make_read_sessionmaker(engine)() as s:
            s.execute(text("SELECT 1"))
            conn = s.connection().connection.driver_connection
            assert conn is not None and conn.autocommit
            assert conn.pgconn.transaction_status == TransactionStatus.IDLE  # no BEGIN was sent
        with make_sessionmaker(engine)() as s:  # the same pooled connection, back in transactional mode
            s.execute(text("SELECT 1"))
            again = s.connection().connection.driver_connection
            assert again is conn and not again.autocommit
            assert again.pgconn.transaction_status == TransactionStatus.INTRANS
    finally:
        engine.dispose()


def test_a_pooled_connection_the_server_ended_is_replaced_without_an_error(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        pid = backend_pid(engine)  # now idle in the pool
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            deadline = time.monotonic() + 10
            while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                assert time.monotonic() < deadline, "the backend did not end"
                time.sleep(0.05)
        with make_read_sessionmaker(engine)() as s:  # would raise "server closed the connection" without the check
            assert s.execute(text("SELECT pg_backend_pid()")).scalar_one() != pid
    finally:
        engine.dispose()


def test_json_columns_read_back_as_json_loads_would_read_them(pg_url: str) -> None:
    """JSON is decoded by pydantic-core's parser (api.db.session.json_loads); past its nesting limit, by json."""
    deep: list[Any] = []
    for _ in range(300):
        deep = [deep]
    doc = {"deep": deep, "big": 10**40, "x": 0.1, "tiny": 5e-324, "s": "é\u2028😀", "n": None, "list": [1, 2.5, True]}
    engine = make_engine(pg_url)
    try:
        with engine.connect() as c:
            for cast in ("jsonb", "json"):
                query = text(f"SELECT CAST(:doc AS {cast}), CAST(CAST(:doc AS {cast}) AS text)")
                value, as_text = c.execute(query, {"doc": json.dumps(doc)}).one()
                assert value == doc and repr(value) == repr(json.loads(as_text))  # jsonb orders keys its own way
    finally:
        engine.dispose()


def test_an_open_event_stream_holds_no_connection(api: httpx.Client, pg_url: str) -> None:
    """A request's session lives until its response is sent, a stream's for as long as a dashboard stays open:
    the stream reads on short sessions, so no connection of the pool sits idle in a transaction meanwhile."""
    job = submit(api, max_steps=1000)  # no worker takes it here: the stream stays open
    db = pg_url.rsplit("/", 1)[1]
    opened = threading.Event()

    def follow() -> None:
        with api.stream("GET", f"/v1/fine_tuning/jobs/{job['id']}/events/stream") as r:
            for _ in r.iter_lines():
                opened.set()

    threading.Thread(target=follow, daemon=True).start()
    assert opened.wait(30)
    time.sleep(1.5)  # a poll or two of the stream
    # a transaction seen idle twice, a second apart, is held open (the stream's would be, for its whole life); the
    # reaper's pass is one short transaction, which a single look may catch between two of its statements
    idle = "SELECT pid, xact_start FROM pg_stat_activity WHERE datname = %s AND state = 'idle in transaction'"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        first = set(admin.execute(idle, (db,)).fetchall())
        time.sleep(1.0)
        second = set(admin.execute(idle, (db,)).fetchall())
    assert not first & second, (first, second)
    api.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").raise_for_status()  # the stream ends with the job


def test_a_plain_sql_read_hands_its_connection_back_ready_for_a_transaction(pg_url: str) -> None:
    """api.db.raw runs a poll's statement in autocommit (no BEGIN, no ROLLBACK) and switches it back."""
    engine = make_engine(pg_url)
    try:
        assert fetch(engine, "SELECT %(x)s::int + 1", {"x": 1}) == [(2,)]
        with make_sessionmaker(engine)() as s:  # the pool's one connection: back in transactional mode
            s.execute(text("SELECT 1"))
            conn = s.connection().connection.driver_connection
            assert conn is not None and not conn.autocommit
            assert conn.pgconn.transaction_status == TransactionStatus.INTRANS
        with pytest.raises(psycopg.errors.UndefinedTable):
            fetch(engine, "SELECT * FROM no_such_table", {})
        assert fetch(engine, "SELECT 1", {}) == [(1,)]  # the failed connection was replaced, nothing left open
    finally:
        engine.dispose()


def test_the_poll_fast_paths_match_the_orm_reads_on_postgres(catalog_dir: Path, tmp_path: Path) -> None:
    """tests/unit/test_polls.py's byte-for-byte checks, on a database and a Redis db of their own."""
    with fresh_database() as url:
        settings = ApiSettings(
            state_dir=tmp_path / "state",
            model_catalog_dir=catalog_dir,
            database_url=url,
            broker_url=fresh_redis_db(),
            worker_token="t0k",
            reaper=False,
            webhook_dispatcher=False,
        )
        with TestClient(create_app(settings)) as client:
            assert_polls_match_the_orm(client, settings)
