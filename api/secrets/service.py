"""A project's secrets (no FastAPI): written encrypted (api.secrets.crypto), listed by name and hint, never read
back by anyone but the claim of a job that names one.

A secret is addressed by (project, name): another project's name is simply not there (404, like one that never
existed). Writing a name that exists rotates it: the next claim of any job naming it carries the new value, and a
running job keeps the value it was claimed with. Deleting one is allowed while a job names it (a leaked key must be
revocable at once): that job's next claim fails it, saying which secret is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pydantic import SecretStr
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.core.errors import InvalidRequest, NotFound, ServiceError, Unprocessable
from api.core.settings import ApiSettings
from api.db.models import Job, ProjectSecret, now
from api.db.session import rows_changed
from api.secrets import crypto
from grpo_core.schemas.graders import named_secrets

log = logging.getLogger(__name__)
MAX_SECRETS_PER_PROJECT = 100
PARAM = "secret_name"  # the path parameter of GET/DELETE /v1/secrets/{secret_name}


def put_secret(session: Session, settings: ApiSettings, project_id: str, name: str, value: str) -> ProjectSecret:
    """Write ``name`` (create, or rotate when it exists): encrypted under SECRETS_KEY's first key. Two writers of
    one name at once: the primary key lets one insert, the other then updates (the last write wins)."""
    token, hint, t = crypto.encrypt(settings, value), crypto.hint(value), now()
    for _ in range(2):
        where = (ProjectSecret.project_id == project_id, ProjectSecret.name == name)
        if rows_changed(session, update(ProjectSecret).where(*where).values(ciphertext=token, hint=hint, updated_at=t)):
            break
        count = session.scalar(select(func.count()).select_from(ProjectSecret).where(where[0])) or 0
        if count >= MAX_SECRETS_PER_PROJECT:
            session.rollback()
            raise InvalidRequest(
                f"this project already has {count} secrets, the most it may keep: delete one first",
                param="name",
                code="too_many_secrets",
            )
        session.add(
            ProjectSecret(project_id=project_id, name=name, ciphertext=token, hint=hint, created_at=t, updated_at=t)
        )
        try:
            session.flush()
            break
        except IntegrityError:  # another request inserted the name just now: update it instead
            session.rollback()
    session.commit()
    return get_secret(session, project_id, name)


def list_secrets(session: Session, project_id: str) -> list[ProjectSecret]:
    """The project's secrets by name (a project keeps at most MAX_SECRETS_PER_PROJECT: one page)."""
    q = select(ProjectSecret).where(ProjectSecret.project_id == project_id).order_by(ProjectSecret.name)
    return list(session.scalars(q))


def get_secret(session: Session, project_id: str, name: str) -> ProjectSecret:
    row = session.get(ProjectSecret, (project_id, name))
    if row is None:
        raise NotFound(f"no secret named {name!r}", param=PARAM)
    return row


def delete_secret(session: Session, project_id: str, name: str) -> None:
    """Gone at once; a job that names it fails at its next claim (see the module doc)."""
    get_secret(session, project_id, name)
    session.execute(delete(ProjectSecret).where(ProjectSecret.project_id == project_id, ProjectSecret.name == name))
    session.commit()


def require_named(session: Session, project_id: str, named: Mapping[str, str | None]) -> None:
    """422 naming the field when a job (or an eval) names a secret its project does not have (``named``: param ->
    name or None, e.g. ``{"integrations[0].api_key_secret": "my-wandb"}``), so the mistake is caught at creation,
    not at the claim. Another project's secret of that name is not there either: the same answer."""
    for param, name in named.items():
        if name is not None and session.get(ProjectSecret, (project_id, name)) is None:
            raise Unprocessable(
                f"no secret named {name!r} in this project: write it first (POST /v1/secrets, or `rft secrets set`)",
                param=param,
                code="secret_not_found",
            )


def for_job(session: Session, settings: ApiSettings, job: Job) -> dict[str, SecretStr]:
    """The decrypted values of the secrets the job's integrations and grader (a score_model grader's own judge)
    name, for its claim only (``values``)."""
    names = {i["api_key_secret"] for i in job.integrations or [] if i.get("api_key_secret")}
    names |= set(named_secrets(job.reinforcement.grader).values())
    return values(session, settings, job.project_id, names, f"job {job.id}")


def values(session: Session, settings: ApiSettings, project_id: str, names: set[str], who: str) -> dict[str, SecretStr]:
    """The decrypted values of project ``project_id``'s secrets ``names``, for the claim of ``who`` (a job, an eval
    run) only. One that is gone or cannot be decrypted is left out and logged here by name (never a value); the
    worker then fails the run saying which (worker.tracking.check_secrets), rather than calling anything with
    anyone else's key."""
    out: dict[str, SecretStr] = {}
    for name in sorted(names):
        row = session.get(ProjectSecret, (project_id, name))
        if row is None:
            log.warning("%s names secret %r, which its project %s no longer has", who, name, project_id)
            continue
        try:
            out[name] = SecretStr(crypto.decrypt(settings, row.ciphertext))
        except (crypto.Undecryptable, ServiceError) as exc:
            log.error("%s: secret %r of project %s cannot be decrypted: %s", who, name, project_id, exc)
    return out


def reencrypt_all(session: Session, settings: ApiSettings) -> tuple[int, list[str]]:
    """Every stored secret re-encrypted under SECRETS_KEY's first key (after an operator put a new key first), so
    the older keys can be dropped. Returns how many were rewritten and the ``project/name`` of those no key opens."""
    done, lost = 0, []
    for row in session.scalars(select(ProjectSecret)):
        try:
            row.ciphertext = crypto.reencrypt(settings, row.ciphertext)
            done += 1
        except crypto.Undecryptable:
            lost.append(f"{row.project_id}/{row.name}")
    session.commit()
    return done, lost
