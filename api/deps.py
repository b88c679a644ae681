"""FastAPI dependencies: settings, a DB session per request, the object store, the caller's project."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

from api.db.models import DEFAULT_PROJECT
from api.errors import Forbidden, Unauthorized
from api.queue import JobQueue
from api.services import tenants
from api.settings import ApiSettings
from runtime.storage import ObjectStore


def get_settings_dep(request: Request) -> ApiSettings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


def get_store(request: Request) -> ObjectStore:
    return request.app.state.store


def get_queue(request: Request) -> JobQueue:
    return request.app.state.queue


SettingsDep = Annotated[ApiSettings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
StoreDep = Annotated[ObjectStore, Depends(get_store)]
QueueDep = Annotated[JobQueue, Depends(get_queue)]


_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def _bearer(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


def current_project(
    settings: SettingsDep, session: SessionDep, authorization: Annotated[str | None, Header()] = None
) -> str:
    """The caller's project, from ``Authorization: Bearer <key>`` (api.services.tenants).

    A project key opens its project; the legacy ``API_KEY`` setting opens the default project. With neither
    configured (no key ever created, ``API_KEY`` unset) the service is open and everything is the default
    project's: local use and ``make demo``. Anything else is 401 in the usual error shape.
    """
    token = _bearer(authorization)
    if token:
        if settings.api_key is not None and hmac.compare_digest(token.encode(), settings.api_key.encode()):
            return DEFAULT_PROJECT
        project = tenants.project_for_key(session, token)
        if project is not None:
            return project
    if settings.api_key is None and not tenants.any_key_exists(session):
        return DEFAULT_PROJECT  # open mode ignores any key sent (SDKs always send one), as before tenants
    if token:
        raise Unauthorized("invalid or revoked API key", code="invalid_api_key", headers=_CHALLENGE)
    raise Unauthorized("missing API key (Authorization: Bearer <key>)", code="missing_api_key", headers=_CHALLENGE)


def require_worker(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> None:
    token = _bearer(authorization)
    if token is None or not hmac.compare_digest(token.encode(), settings.internal_token.encode()):
        raise Unauthorized("internal endpoints need the worker token")


def require_admin(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> None:
    """The operator routes need ADMIN_TOKEN; with none configured they are off (403), whatever the key."""
    if settings.admin_token is None:
        raise Forbidden(
            "the admin routes are off: set ADMIN_TOKEN on the API, or use `python -m api.admin models …`",
            code="admin_disabled",
        )
    token = _bearer(authorization)
    if token is None or not hmac.compare_digest(token.encode(), settings.admin_token.encode()):
        raise Unauthorized(
            "admin routes need the ADMIN_TOKEN bearer token", code="invalid_admin_token", headers=_CHALLENGE
        )


CurrentProject = Annotated[str, Depends(current_project)]
