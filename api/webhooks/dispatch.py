"""Sends queued webhook deliveries: claim, sign (Standard Webhooks), POST, record; retried with backoff.

Each attempt is claimed with one guarded ``UPDATE … SET next_attempt_at = now + claim window WHERE id = :id AND
status = 'pending' AND next_attempt_at = :seen``: of two API processes polling the same table only one sees
rowcount 1, and a dispatcher that dies mid-attempt only delays the delivery by the claim window. The HTTP call
runs with no transaction open. Delivery is at least once; receivers dedupe on ``webhook-id``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from api.core.settings import ApiSettings
from api.db.models import WebhookDelivery, WebhookEndpoint, now
from api.db.session import rows_changed
from api.webhooks.service import SECRET_PREFIX

log = logging.getLogger(__name__)


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """``v1,<base64 HMAC-SHA256(base64decode(secret sans whsec_), "{id}.{timestamp}.{body}")>``."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


@dataclass(frozen=True)
class Claimed:
    id: str
    attempts: int
    url: str
    secret: str
    payload: dict[str, Any]


def claim_next(session: Session, claim_seconds: int) -> Claimed | None:
    """Claim the oldest due pending delivery for one attempt, or None. Commits (the claim must be visible)."""
    t = now()
    candidates = session.execute(
        select(WebhookDelivery.id, WebhookDelivery.next_attempt_at)
        .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= t)
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
        .limit(10)
    ).all()
    session.rollback()  # end the read: on SQLite a read transaction cannot always upgrade to a write
    for delivery_id, seen in candidates:
        res = rows_changed(
            session,
            update(WebhookDelivery)
            .where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.status == "pending",
                WebhookDelivery.next_attempt_at == seen,
            )
            .values(next_attempt_at=t + claim_seconds),
        )
        session.commit()
        if res != 1:
            continue  # another dispatcher took it first
        row = session.execute(
            select(WebhookDelivery.attempts, WebhookDelivery.payload, WebhookEndpoint.url, WebhookEndpoint.secret)
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .where(WebhookDelivery.id == delivery_id)
        ).first()
        session.rollback()
        if row is not None:  # None: the endpoint was deleted meanwhile (its deliveries with it)
            return Claimed(delivery_id, row.attempts, row.url, row.secret, row.payload)
    return None


def send(client: httpx.Client, claimed: Claimed) -> tuple[int | None, str | None, int]:
    """One signed POST; returns (status code or None, error or None, duration in ms). Never raises."""
    body = json.dumps(claimed.payload, separators=(",", ":"))
    ts = int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": claimed.id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign(claimed.secret, claimed.id, ts, body),
        "user-agent": "rft-service-webhooks/1",
    }
    start = time.monotonic()
    try:
        resp = client.post(claimed.url, content=body.encode(), headers=headers)
    except Exception as exc:  # connection refused, timeout, bad URL…: an attempt that got no answer
        return None, f"{type(exc).__name__}: {exc}"[:500], int((time.monotonic() - start) * 1000)
    ms = int((time.monotonic() - start) * 1000)
    if 200 <= resp.status_code < 300:
        return resp.status_code, None, ms
    return resp.status_code, f"HTTP {resp.status_code}: {resp.text[:200]}", ms


def record_attempt(
    session: Session,
    claimed: Claimed,
    status_code: int | None,
    error: str | None,
    duration_ms: int,
    schedule: Sequence[int],
) -> str:
    """Append the attempt to the history; 2xx → delivered, else retry after ``schedule[n-1]`` or give up."""
    t = now()
    attempt = claimed.attempts + 1
    history = session.scalar(select(WebhookDelivery.history).where(WebhookDelivery.id == claimed.id)) or []
    session.rollback()  # a fresh write transaction; the attempts guard below proves the history is still current
    entry = {"attempt": attempt, "at": t, "status_code": status_code, "error": error, "duration_ms": duration_ms}
    values: dict[str, Any] = {
        "attempts": attempt,
        "last_status_code": status_code,
        "last_error": error,
        "history": [*history, entry],
    }
    if error is None:
        values |= {"status": "delivered", "delivered_at": t}
    elif attempt <= len(schedule):
        values |= {"status": "pending", "next_attempt_at": t + math.ceil(schedule[attempt - 1])}
    else:
        values |= {"status": "failed"}
    # Guarded by the attempt count: if our claim ran out and another dispatcher already recorded, do not clobber.
    res = rows_changed(
        session,
        update(WebhookDelivery)
        .where(WebhookDelivery.id == claimed.id, WebhookDelivery.attempts == claimed.attempts)
        .values(**values),
    )
    session.commit()
    if res != 1:
        log.warning("webhook delivery %s: attempt %d was recorded by someone else", claimed.id, attempt)
    return values["status"]


class WebhookDispatcher:
    """A daemon thread in the API process: every ``poll_seconds`` it sends whatever deliveries are due."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        poll_seconds: float,
        timeout_seconds: float,
        schedule: Sequence[int],
        max_per_tick: int = 50,
    ) -> None:
        self.sessions = sessions
        self.poll_seconds = poll_seconds
        self.timeout_seconds = timeout_seconds
        self.schedule = list(schedule)
        self.max_per_tick = max_per_tick
        # Longer than one attempt can take, so a live dispatcher's claim never runs out under it.
        self.claim_seconds = math.ceil(timeout_seconds) + 30
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = httpx.Client(timeout=timeout_seconds, follow_redirects=False)

    def run_once(self) -> int:
        """Send due deliveries one claim at a time (a claim never waits behind other sends); returns how many."""
        sent = 0
        while sent < self.max_per_tick and not self._stop.is_set():
            with self.sessions() as session:
                claimed = claim_next(session, self.claim_seconds)
                if claimed is None:
                    return sent
                code, error, ms = send(self._client, claimed)
                status = record_attempt(session, claimed, code, error, ms, self.schedule)
            log.info("webhook %s attempt %d -> %s (%s)", claimed.id, claimed.attempts + 1, code, status)
            sent += 1
        return sent

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.run_once()
            except Exception:  # a bad row or a database hiccup must not end webhook delivery for good
                log.exception("webhook dispatcher tick failed; retrying in %.1f s", self.poll_seconds)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="webhook-dispatcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end and wait for an attempt in progress (bounded by the HTTP timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout_seconds + 5)
        self._client.close()


def start_dispatcher(settings: ApiSettings, sessions: sessionmaker[Session]) -> WebhookDispatcher | None:
    """The API lifespan's one call: a running dispatcher, or None when this process is told not to send."""
    if not settings.webhook_dispatcher:
        return None
    dispatcher = WebhookDispatcher(
        sessions,
        poll_seconds=settings.webhook_poll_seconds,
        timeout_seconds=settings.webhook_timeout_seconds,
        schedule=settings.webhook_retry_schedule,
    )
    dispatcher.start()
    return dispatcher
