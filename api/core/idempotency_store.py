"""Idempotency keys with Stripe's semantics (no FastAPI here; api.core.idempotency wires it to the routes).

A client that retries a POST after a timeout cannot know whether the first one created a job; with an
``Idempotency-Key`` it can retry blindly. The rules, per (project, key):

- first use: a row is inserted with ``status_code NULL`` (in flight) and committed *before* the work, so a
  concurrent retry sees it; the primary key decides who is first (INSERT, IntegrityError = someone has it),
  which is race-free on PostgreSQL and SQLite alike, with no SELECT … FOR UPDATE;
- finished: the status and JSON body are stored and replayed byte for byte to every later retry;
- in flight: 409 ``idempotency_key_in_use`` with ``Retry-After: 1`` (the client just retries);
- same key, different request (fingerprint): 422 ``idempotency_key_reused`` — a client bug, never a replay;
- a 4xx raised before the work was done saves nothing: the row is deleted so a corrected request can reuse it;
- keys older than the TTL (24 h) are treated as absent, and pruned whenever a key is taken.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.core.errors import Conflict, Unprocessable
from api.db.models import IdempotencyKey, now
from api.db.session import rows_changed

PARAM = "Idempotency-Key"
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class Replay:
    """The stored outcome of the first request with this key."""

    status_code: int
    body: dict[str, Any]


def fingerprint(method_path: str, parts: Iterable[bytes]) -> str:
    """sha256 over the method, the path and the request's meaning (never raw multipart: its boundary varies)."""
    digest = hashlib.sha256(method_path.encode() + b"\n")
    for part in parts:
        digest.update(part)
    return digest.hexdigest()


def canonical_json(raw: bytes) -> bytes:
    """Key order and whitespace do not change a JSON request's meaning; undecodable bytes are hashed as sent."""
    try:
        return json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, UnicodeDecodeError):
        return raw


def prune(session: Session, ttl_seconds: int) -> int:
    """Delete expired keys (opportunistic: called whenever a key is taken, uses the created_at index)."""
    res = rows_changed(session, delete(IdempotencyKey).where(IdempotencyKey.created_at < now() - ttl_seconds))
    session.commit()
    return res or 0


def begin(
    session: Session,
    *,
    project_id: str,
    key: str,
    method_path: str,
    request_hash: str,
    ttl_seconds: int,
) -> Replay | None:
    """Take the key (returns None: do the work) or return the stored outcome; raise 409/422 otherwise.

    Commits: the in-flight row must be visible to a concurrent retry before any work starts.
    """
    prune(session, ttl_seconds)
    for _ in range(3):  # the holder may delete its row (a 4xx) between our INSERT and our SELECT: try again
        session.add(
            # status_code NULL: in flight until complete() stores the outcome
            IdempotencyKey(project_id=project_id, key=key, method_path=method_path[:300], request_hash=request_hash)
        )
        try:
            session.commit()
            return None
        except IntegrityError:
            session.rollback()
        row = session.scalar(
            select(IdempotencyKey)
            .where(IdempotencyKey.project_id == project_id, IdempotencyKey.key == key)
            .execution_options(populate_existing=True)
        )
        if row is None:
            continue
        session.expunge(row)  # detached: a retried INSERT of the same key must not clash with it in the session
        session.rollback()  # end the read: on SQLite a read transaction cannot always be upgraded to a write
        if row.created_at < now() - ttl_seconds:  # expired between the prune and now: treat as absent
            session.execute(
                delete(IdempotencyKey).where(
                    IdempotencyKey.project_id == project_id,
                    IdempotencyKey.key == key,
                    IdempotencyKey.created_at == row.created_at,
                )
            )
            session.commit()
            continue
        if row.status_code is None:
            raise Conflict(
                "a request with this Idempotency-Key is still being processed; retry shortly",
                param=PARAM,
                code="idempotency_key_in_use",
                headers={"Retry-After": "1"},
            )
        if row.request_hash != request_hash or row.method_path != method_path[:300]:
            raise Unprocessable(
                "this Idempotency-Key was already used with a different request; use a new key for a new request",
                param=PARAM,
                code="idempotency_key_reused",
            )
        return Replay(status_code=row.status_code, body=row.response or {})
    raise Conflict(
        "this Idempotency-Key is contended; retry shortly",
        param=PARAM,
        code="idempotency_key_in_use",
        headers={"Retry-After": "1"},
    )


def complete(session: Session, *, project_id: str, key: str, status_code: int, body: dict[str, Any]) -> None:
    """Store the outcome that every retry will replay (only the in-flight row is ever completed)."""
    session.execute(
        update(IdempotencyKey)
        .where(
            IdempotencyKey.project_id == project_id,
            IdempotencyKey.key == key,
            IdempotencyKey.status_code.is_(None),
        )
        .values(status_code=status_code, response=body)
    )
    session.commit()


def release(session: Session, *, project_id: str, key: str) -> None:
    """Forget an in-flight key whose request was refused (4xx), so a corrected request may reuse it."""
    session.execute(
        delete(IdempotencyKey).where(
            IdempotencyKey.project_id == project_id,
            IdempotencyKey.key == key,
            IdempotencyKey.status_code.is_(None),
        )
    )
    session.commit()
