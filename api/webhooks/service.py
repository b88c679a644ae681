"""Webhook endpoints and the outbox of job events (no FastAPI, no network).

``record_job_event`` writes one ``WebhookDelivery`` row per subscribed endpoint inside the caller's
transaction: the event exists if and only if the job's terminal status was committed, and nothing slow (HTTP)
ever runs while a transaction is open. api.webhooks.dispatch sends the rows afterwards.
"""

from __future__ import annotations

import base64
import secrets
import time
from typing import Any, Protocol

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from api.core.errors import NotFound
from api.core.pagination import Page, anchor, keyset_page
from api.db.models import WebhookDelivery, WebhookEndpoint, new_id, now
from api.webhooks.schemas import EVENT_TYPES

SECRET_PREFIX = "whsec_"


class _JobLike(Protocol):
    id: str
    project_id: str


def new_secret() -> str:
    """``whsec_`` + base64 of 32 random bytes (Standard Webhooks' format; the receiver base64-decodes it)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_delivery_id() -> str:
    """Time-ordered (hex nanoseconds first) so "newest first" is exact within a second; random tail for uniqueness."""
    return f"whmsg-{time.time_ns():016x}{secrets.token_hex(6)}"


def create_endpoint(session: Session, project_id: str, url: str, event_types: list[str]) -> WebhookEndpoint:
    row = WebhookEndpoint(
        id=new_id("whep"),
        project_id=project_id,
        url=url,
        secret=new_secret(),
        event_types=list(event_types),
        disabled=0,
    )
    session.add(row)
    session.commit()
    return row


def list_endpoints(session: Session, project_id: str) -> list[WebhookEndpoint]:
    q = select(WebhookEndpoint).where(WebhookEndpoint.project_id == project_id)
    return list(session.scalars(q.order_by(WebhookEndpoint.created_at.desc(), WebhookEndpoint.id.desc())))


def get_endpoint(session: Session, project_id: str, endpoint_id: str) -> WebhookEndpoint:
    row = session.scalar(
        select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.project_id == project_id)
    )
    if row is None:
        raise NotFound(f"no webhook endpoint with id {endpoint_id!r}", param="endpoint_id")
    return row


def delete_endpoint(session: Session, project_id: str, endpoint_id: str) -> None:
    """Its deliveries go with it (ON DELETE CASCADE): pending ones are never sent."""
    get_endpoint(session, project_id, endpoint_id)
    session.execute(
        delete(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.project_id == project_id)
    )
    session.commit()


def list_deliveries(
    session: Session, project_id: str, endpoint_id: str, *, limit: int, after: str | None
) -> Page[WebhookDelivery]:
    """Newest first; ``after`` is the id of the last delivery of the previous page."""
    get_endpoint(session, project_id, endpoint_id)
    scope = WebhookDelivery.endpoint_id == endpoint_id
    start = anchor(
        after, WebhookDelivery.id == after, scope, missing=f"no delivery {after!r} for endpoint {endpoint_id}"
    )
    keys = [WebhookDelivery.created_at, WebhookDelivery.id]
    return keyset_page(
        session,
        select(WebhookDelivery).where(scope),
        keys,
        limit=limit,
        descending=True,
        after=start,
    )


def event_payload(event_id: str, event_type: str, job_id: str, created_at: int) -> dict[str, Any]:
    """OpenAI's webhook event shape: receivers fetch the job by ``data.id`` for the details."""
    return {"id": event_id, "object": "event", "type": event_type, "created_at": created_at, "data": {"id": job_id}}


def record_job_event(session: Session, job: _JobLike, event_type: str) -> int:
    """Queue ``event_type`` for every enabled endpoint of the job's project subscribed to it; no commit here.

    Call it in the same transaction as the status change it reports (the outbox pattern): a rolled-back
    transition sends nothing, a committed one is sent at least once. Returns the number of deliveries queued.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {event_type!r}")
    endpoints = session.scalars(
        select(WebhookEndpoint).where(WebhookEndpoint.project_id == job.project_id, WebhookEndpoint.disabled == 0)
    )
    t = now()
    event_id = new_id("evt")  # one event, one id, whichever endpoints receive it
    queued = 0
    for ep in endpoints:
        if event_type not in (ep.event_types or []):
            continue
        session.add(
            WebhookDelivery(
                id=new_delivery_id(),
                endpoint_id=ep.id,
                job_id=job.id,
                event_type=event_type,
                payload=event_payload(event_id, event_type, job.id, t),
                status="pending",
                attempts=0,
                next_attempt_at=t,
                history=[],
                created_at=t,
            )
        )
        queued += 1
    return queued
