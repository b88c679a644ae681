"""FastAPI dependencies every domain shares: settings, a DB session per request (and a read-only one), the object
store, the queue, the caller's project (api.core.callers resolves it).

Where each runs: FastAPI calls an ``async def`` dependency on the event loop and hands a plain ``def`` one to its
threadpool, a hop that costs CPU and a wait for a thread and the GIL (bench/api_load.py measures it:
docs/benchmarks.md, "The API under load"). So what does no I/O (reading app state, opening a session, which
connects only at its first query) is ``async``; what queries the database (``current_project``) runs in the
threadpool.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, ParamSpec, TypeVar

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from api.core.callers import CHALLENGE, bearer, resolve
from api.core.errors import Forbidden, Unauthorized
from api.core.queue import JobQueue
from api.core.settings import ApiSettings
from runtime.storage import ObjectStore

P = ParamSpec("P")
R = TypeVar("R")


async def get_settings_dep(request: Request) -> ApiSettings:
    return request.app.state.settings


async def get_session(request: Request) -> AsyncIterator[Session]:
    """The request's transaction. Closing rolls back whatever is left open, which is I/O: in the threadpool."""
    session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        if session.in_transaction():
            await run_in_threadpool(session.close)
        else:
            session.close()


async def get_read_session(request: Request) -> AsyncIterator[Session]:
    """A read-only route's session, in autocommit (api.db.session.make_read_sessionmaker): it never holds a
    transaction, so closing it returns its connection to the pool without a round trip, on the event loop."""
    with request.app.state.read_sessionmaker() as session:
        yield session


async def get_store(request: Request) -> ObjectStore:
    return request.app.state.store


async def get_queue(request: Request) -> JobQueue:
    return request.app.state.queue


def in_one_hop(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """Run a plain ``def`` route's body in the threadpool, and FastAPI's check and JSON encoding of its answer
    on the event loop: for a ``def`` route FastAPI hops to the threadpool twice, once for the body and once
    more to validate what it returned. Pydantic validates and encodes in Rust holding the GIL, so on the loop
    they cost it nothing it would not lose to a thread anyway."""

    @functools.wraps(endpoint)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await run_in_threadpool(endpoint, *args, **kwargs)

    return run


SettingsDep = Annotated[ApiSettings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
ReadSessionDep = Annotated[Session, Depends(get_read_session)]
StoreDep = Annotated[ObjectStore, Depends(get_store)]
QueueDep = Annotated[JobQueue, Depends(get_queue)]


def current_project(
    request: Request, settings: SettingsDep, authorization: Annotated[str | None, Header()] = None
) -> str:
    """The caller's project, from ``Authorization: Bearer <key>`` (api.core.callers).

    A project key opens its project; the legacy ``API_KEY`` setting opens the default project. With neither
    configured (no key ever created, ``API_KEY`` unset) the service is open and everything is the default
    project's: local use and ``make demo``. Anything else is 401 in the usual error shape.

    The lookup reads on a session of its own, in autocommit, whose connection is back in the pool when this
    returns: none of the route's transaction, no BEGIN/ROLLBACK for it.
    """
    with request.app.state.read_sessionmaker() as session:
        return resolve(settings, session, authorization)[0]


def require_worker(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> None:
    token = bearer(authorization)
    if token is None or not hmac.compare_digest(token.encode(), settings.internal_token.encode()):
        raise Unauthorized("internal endpoints need the worker token")


def require_admin(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> None:
    """The operator routes need ADMIN_TOKEN; with none configured they are off (403), whatever the key."""
    if settings.admin_token is None:
        raise Forbidden(
            "the admin routes are off: set ADMIN_TOKEN on the API, or use `python -m api.admin models …`",
            code="admin_disabled",
        )
    token = bearer(authorization)
    if token is None or not hmac.compare_digest(token.encode(), settings.admin_token.encode()):
        raise Unauthorized(
            "admin routes need the ADMIN_TOKEN bearer token", code="invalid_admin_token", headers=CHALLENGE
        )


CurrentProject = Annotated[str, Depends(current_project)]
