"""FastAPI dependencies: settings, a DB session per request, the object store, the caller's project."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

from api.db.models import DEFAULT_PROJECT
from api.errors import Unauthorized
from api.settings import Settings
from api.storage import ObjectStore


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


def get_store(request: Request) -> ObjectStore:
    return request.app.state.store


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
StoreDep = Annotated[ObjectStore, Depends(get_store)]


def _bearer(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


def current_project(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> str:
    """The caller's project. One key and one project for now; per-project keys come with tenants."""
    if settings.api_key is None:
        return DEFAULT_PROJECT
    token = _bearer(authorization)
    if token is None or not hmac.compare_digest(token, settings.api_key):
        raise Unauthorized("missing or invalid API key (Authorization: Bearer <key>)")
    return DEFAULT_PROJECT


def require_worker(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> None:
    token = _bearer(authorization)
    if token is None or not hmac.compare_digest(token, settings.internal_token):
        raise Unauthorized("internal endpoints need the worker token")


CurrentProject = Annotated[str, Depends(current_project)]
