"""Projects (tenants) and their API keys (no FastAPI): create, list, revoke. A bearer key is resolved to its
project by api.core.callers (which also keeps open mode: no key created yet, no key needed).

A key is ``rft_`` + 32 random bytes (URL-safe base64). Only its SHA-256 is stored (``callers.hash_key``): a leaked
database yields no usable key, and because the key carries 256 bits of entropy a plain (unsalted, fast) hash is
enough — nobody can brute-force it the way they could a password. The plaintext exists once, in the answer to
``create_key``. Revoked keys still count as created: revoking every key must never silently reopen the service.
"""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.core.callers import hash_key
from api.db.models import ApiKey, Project, new_id, now

KEY_PREFIX = "rft_"


class TenantError(ValueError):
    """An admin action that cannot be done (unknown project or key, empty name)."""


def key_hint(key: str) -> str:
    """``rft_…abcd``: recognisable in a list, useless as a credential."""
    return f"{KEY_PREFIX}…{key[-4:]}"


def create_project(session: Session, name: str) -> Project:
    name = name.strip()
    if not 1 <= len(name) <= 256:
        raise TenantError("a project name is 1 to 256 characters")
    row = Project(id=new_id("proj"), name=name)
    session.add(row)
    session.commit()
    return row


def list_projects(session: Session) -> list[Project]:
    return list(session.scalars(select(Project).order_by(Project.created_at, Project.id)))


def set_share(
    session: Session,
    project_id: str,
    *,
    weight: float | None = None,
    max_priority: int | None = None,
    max_running_jobs: int | None = None,
    no_running_limit: bool = False,
) -> Project:
    """Set a project's share of the fleet (api.jobs.scheduling): its fair-share weight, the highest priority its jobs
    may ask for, its running-job limit (``no_running_limit``: back to the service's default). Unset: unchanged."""
    project = session.get(Project, project_id)
    if project is None:
        raise TenantError(f"no project {project_id!r}")
    if weight is not None:
        if not weight > 0:
            raise TenantError(f"weight must be above 0, not {weight}")
        project.share_weight = weight
    if max_priority is not None:
        if not -100 <= max_priority <= 100:
            raise TenantError(f"max priority must be within -100..100, not {max_priority}")
        project.max_priority = max_priority
    if max_running_jobs is not None:
        if max_running_jobs < 1:
            raise TenantError(f"max running jobs must be at least 1, not {max_running_jobs}")
        project.max_running_jobs = max_running_jobs
    elif no_running_limit:
        project.max_running_jobs = None
    session.commit()
    session.refresh(project)
    return project


def create_key(session: Session, project_id: str, name: str | None = None) -> tuple[ApiKey, str]:
    """A new key for the project: the row (hash and hint only) and the key itself, which is never stored."""
    if session.get(Project, project_id) is None:
        raise TenantError(f"no project {project_id!r}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKey(id=new_id("key"), project_id=project_id, name=name, key_hash=hash_key(key), hint=key_hint(key))
    session.add(row)
    session.commit()
    return row, key


def list_keys(session: Session, project_id: str | None = None) -> list[ApiKey]:
    q = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if project_id is not None:
        q = q.where(ApiKey.project_id == project_id)
    return list(session.scalars(q))


def revoke_key(session: Session, key_id: str) -> ApiKey:
    """Idempotent: a revoked key keeps its first revocation time."""
    row = session.get(ApiKey, key_id)
    if row is None:
        raise TenantError(f"no API key {key_id!r}")
    if row.revoked_at is None:
        row.revoked_at = now()
        session.commit()
    return row
