"""Who is calling: a bearer key resolved to its project, and the reads a running job is polled with, at one query a
request.

A project key (created and revoked by api.tenants) is stored as its SHA-256 only (``hash_key``), so a key
is resolved by its hash (``project_for_key``). Open mode: while no key has ever been created (and the legacy
``API_KEY`` setting is unset), the service needs no key and everything belongs to the default project — local use
and ``make demo``. Revoked keys still count (``any_key_exists``): revoking every key must never silently reopen the
service.

Resolving a bearer key is a query (``project_for_key``; in open mode ``any_key_exists``), and a status poll is
otherwise one query too: the lookup was half of a poll's round trips and a fifth of the API's CPU under load
(bench/api_load.py). So each API process remembers what a key resolved to (``KeyCache``), and a read made with a
remembered answer carries a *guard*: a condition in the read's own WHERE that holds only while the answer still does
(the key exists, is live and opens that project; in open mode, no key exists at all). A key revoked, or the first
key created, in any process makes the guarded read find nothing; ``Caller.read`` then resolves the key the slow way
(401 if it is no longer valid) and runs the read again unguarded. Nothing is served on a stale answer, and the slow
path runs only for a 404, an empty page, or once a minute per key (the entry's age limit, which also keeps
``last_used_at`` within its one-minute resolution).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from api.core.errors import Unauthorized
from api.core.settings import ApiSettings
from api.db.models import DEFAULT_PROJECT, ApiKey, now

log = logging.getLogger(__name__)

LAST_USED_RESOLUTION = 60  # seconds: last_used_at is rewritten at most this often per key (no write per request)
R = TypeVar("R")
Guard = tuple[str, Mapping[str, Any]]  # a SQL condition on the caller, for a read's WHERE, and its parameters
NO_GUARD: Guard = ("1 = 1", {})
CHALLENGE = {"WWW-Authenticate": "Bearer"}
OPEN = ""  # the cache's key for "open mode, whatever token was sent"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def any_key_exists(session: Session) -> bool:
    """Whether the service has left open mode (see the module doc); revoked keys count."""
    return session.scalar(select(ApiKey.id).limit(1)) is not None


def project_for_key(session: Session, key: str) -> str | None:
    """The project a live key opens, or None (unknown or revoked). Touches ``last_used_at`` at most once a minute."""
    row = session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(key)))
    if row is None or row.revoked_at is not None:
        return None
    project_id, t = row.project_id, now()  # read before the commit below (a session may expire rows on commit)
    if row.last_used_at is None or row.last_used_at <= t - LAST_USED_RESOLUTION:
        try:  # bookkeeping only: a busy database must not turn a valid key into an error
            session.execute(
                update(ApiKey)
                .where(ApiKey.id == row.id)
                .where((ApiKey.last_used_at.is_(None)) | (ApiKey.last_used_at <= t - LAST_USED_RESOLUTION))
                .values(last_used_at=t)
            )
            session.commit()
        except SQLAlchemyError:
            log.warning("could not record the use of API key %s", row.id, exc_info=True)
            session.rollback()
    return project_id


def bearer(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


def resolve(settings: ApiSettings, session: Session, authorization: str | None) -> tuple[str, str | None]:
    """The caller's project the slow way (two queries at most), or 401; and what the answer rests on, as the
    ``KeyCache`` key to remember it by: the key's hash, ``OPEN``, or None (the legacy ``API_KEY``: in process)."""
    token = bearer(authorization)
    if token:
        if settings.api_key is not None and hmac.compare_digest(token.encode(), settings.api_key.encode()):
            return DEFAULT_PROJECT, None
        project = project_for_key(session, token)
        if project is not None:
            return project, hash_key(token)
    if settings.api_key is None and not any_key_exists(session):
        return DEFAULT_PROJECT, OPEN  # open mode ignores any key sent (SDKs always send one)
    if token:
        raise Unauthorized("invalid or revoked API key", code="invalid_api_key", headers=CHALLENGE)
    raise Unauthorized("missing API key (Authorization: Bearer <key>)", code="missing_api_key", headers=CHALLENGE)


class KeyCache:
    """Key hash (or ``OPEN``) -> (project, when resolved), at most ``size`` entries, each trusted for ``max_age``
    seconds and only under its guard. Written from the threadpool's threads: the lock keeps an eviction from
    racing a write (reads are single dictionary lookups)."""

    def __init__(self, size: int = 10_000, max_age: float = LAST_USED_RESOLUTION) -> None:
        self.size, self.max_age = size, max_age
        self._entries: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        hit = self._entries.get(key)
        if hit is None or time.monotonic() - hit[1] > self.max_age:
            return None
        return hit[0]

    def put(self, key: str, project: str) -> None:
        with self._lock:
            self._entries[key] = (project, time.monotonic())
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def drop(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)


def _guard(key: str) -> Guard:
    """The condition under which the cached answer for ``key`` still holds, as SQL for a read's WHERE (an indexed
    lookup of the key's hash; in open mode, whether the api_keys table is still empty)."""
    if key == OPEN:
        return "NOT EXISTS (SELECT 1 FROM api_keys)", {}
    return "EXISTS (SELECT 1 FROM api_keys k WHERE k.key_hash = %(caller_key)s AND k.revoked_at IS NULL)", {
        "caller_key": key
    }


@dataclass
class Caller:
    """The caller of a read: its project when the process remembers it (with the guard that checks it in the
    read's own query), else resolved in the read's thread, on its session."""

    settings: ApiSettings
    cache: KeyCache
    authorization: str | None
    key: str | None = None  # the cache key: a token's hash, OPEN, or None (legacy API_KEY or nothing to cache)
    project: str | None = None
    guard: Guard = NO_GUARD

    @classmethod
    def of(cls, settings: ApiSettings, cache: KeyCache, authorization: str | None) -> Caller:
        """No I/O: what the cache says (on the event loop, no threadpool hop)."""
        token = bearer(authorization)
        caller = cls(settings, cache, authorization)
        if token and settings.api_key is not None and hmac.compare_digest(token.encode(), settings.api_key.encode()):
            caller.project = DEFAULT_PROJECT  # the legacy key is checked in process: nothing to guard
            return caller
        caller.key = hash_key(token) if token else OPEN
        caller.project = cache.get(caller.key)
        if caller.project is None and token and settings.api_key is None:
            caller.project = cache.get(OPEN)  # open mode ignores the token; a key's own entry comes first
            caller.key = OPEN if caller.project is not None else caller.key
        if caller.project is not None:
            caller.guard = _guard(caller.key)
        return caller

    def _resolve(self, session: Session) -> str:
        if self.key is not None:
            self.cache.drop(self.key)
        self.project, self.key = resolve(self.settings, session, self.authorization)
        self.guard = NO_GUARD
        if self.key is not None:
            self.cache.put(self.key, self.project)
        return self.project

    def verified(self, session: Session) -> str:
        """The project, checked now: for a read that does not carry the guard (one query more)."""
        return self.project if self.project is not None and self.key is None else self._resolve(session)

    def read(self, session: Session, fast: Callable[[str, Guard], R | None], slow: Callable[[str], R]) -> R:
        """``fast(project, guard)`` under the remembered answer (one statement); where it finds nothing (None: a
        404, an empty page, or a guard that failed), ``slow(project)`` after resolving the caller the slow way,
        which raises the 401 or the 404, or returns what is there to return."""
        if self.project is not None:
            found = fast(self.project, self.guard)
            if found is not None:
                return found
        return slow(self._resolve(session))
