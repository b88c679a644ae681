"""The caller's project's secrets: write (create or rotate), list, look up and delete — never read a value back."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter

from api.core.deps import CurrentProject, SessionDep, SettingsDep
from api.core.errors import ERROR_RESPONSES
from api.core.idempotency import idempotent
from api.core.pagination import ListResponse
from api.core.settings import ApiSettings
from api.secrets import service as svc
from api.secrets.schemas import Secret, SecretCreate, SecretDeleted

router = APIRouter(prefix="/v1/secrets", tags=["secrets"], responses=ERROR_RESPONSES)


def write_meaning(body: SecretCreate, settings: ApiSettings, **_: Any) -> Iterator[bytes]:
    """What identifies a write under an ``Idempotency-Key``: the name and an HMAC of the value under the service's
    own secret, so the fingerprint the API stores for a day is no plain hash a guessed value could be checked
    against."""
    mac = hmac.new(settings.internal_token.encode(), body.value.get_secret_value().encode(), hashlib.sha256)
    yield json.dumps({"name": body.name, "value_hmac": mac.hexdigest()}, sort_keys=True).encode()


@router.post("", status_code=201)
@idempotent(status_code=201, meaning=write_meaning)
def write_secret(body: SecretCreate, session: SessionDep, settings: SettingsDep, project: CurrentProject) -> Secret:
    """Write a secret of this project (a new name creates it, an existing one rotates it). The value is stored
    encrypted and never returned: the answer has its name and a hint. A job names it in its integrations:
    ``{"type": "wandb", "api_key_secret": NAME}``."""
    row = svc.put_secret(session, settings, project, body.name, body.value.get_secret_value())
    return Secret.from_row(row)


@router.get("")
def list_secrets(session: SessionDep, project: CurrentProject) -> ListResponse[Secret]:
    """This project's secrets by name, with hints (never values)."""
    return ListResponse[Secret].page([Secret.from_row(r) for r in svc.list_secrets(session, project)], False)


@router.get("/{secret_name}")
def retrieve_secret(secret_name: str, session: SessionDep, project: CurrentProject) -> Secret:
    """One secret's name, hint and when it was written (never its value)."""
    return Secret.from_row(svc.get_secret(session, project, secret_name))


@router.delete("/{secret_name}")
def delete_secret(secret_name: str, session: SessionDep, project: CurrentProject) -> SecretDeleted:
    """Delete it at once (to revoke a leaked key). A job that names it and has not started yet fails when a
    worker claims it, saying which secret is gone; a running job keeps the value it started with."""
    svc.delete_secret(session, project, secret_name)
    return SecretDeleted(name=secret_name)
