"""Webhook endpoints of the caller's project, and the deliveries (with every attempt) sent to each."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.db.models import WebhookDelivery as DeliveryRow
from api.db.models import WebhookEndpoint as EndpointRow
from api.deps import CurrentProject, SessionDep
from api.errors import ERROR_RESPONSES
from api.schemas.common import ListResponse
from api.schemas.webhooks import (
    DeliveryAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointCreate,
    WebhookEndpointCreated,
    WebhookEndpointDeleted,
)
from api.services import webhooks as svc

router = APIRouter(prefix="/v1/webhook_endpoints", tags=["webhooks"], responses=ERROR_RESPONSES)
Limit = Annotated[int, Query(ge=1, le=100)]


def endpoint_schema(row: EndpointRow) -> WebhookEndpoint:
    return WebhookEndpoint(id=row.id, url=row.url, event_types=list(row.event_types), created_at=row.created_at)


def delivery_schema(row: DeliveryRow) -> WebhookDelivery:
    return WebhookDelivery(
        id=row.id,
        endpoint_id=row.endpoint_id,
        event_type=row.event_type,
        job_id=row.job_id,
        status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
        last_status_code=row.last_status_code,
        last_error=row.last_error,
        created_at=row.created_at,
        delivered_at=row.delivered_at,
        payload=row.payload,
        history=[DeliveryAttempt(**h) for h in row.history or []],
    )


@router.post("", status_code=201)
def create_webhook_endpoint(
    body: WebhookEndpointCreate, session: SessionDep, project: CurrentProject
) -> WebhookEndpointCreated:
    """Register a receiver for job events. The signing ``secret`` is in this response only: store it."""
    row = svc.create_endpoint(session, project, body.url, list(body.event_types))
    return WebhookEndpointCreated(**endpoint_schema(row).model_dump(exclude={"object"}), secret=row.secret)


@router.get("")
def list_webhook_endpoints(session: SessionDep, project: CurrentProject) -> ListResponse[WebhookEndpoint]:
    """This project's endpoints, newest first (secrets are never listed)."""
    return ListResponse[WebhookEndpoint].page([endpoint_schema(r) for r in svc.list_endpoints(session, project)], False)


@router.delete("/{endpoint_id}")
def delete_webhook_endpoint(endpoint_id: str, session: SessionDep, project: CurrentProject) -> WebhookEndpointDeleted:
    """Stop sending to this endpoint; its pending deliveries are dropped."""
    svc.delete_endpoint(session, project, endpoint_id)
    return WebhookEndpointDeleted(id=endpoint_id)


@router.get("/{endpoint_id}/deliveries")
def list_webhook_deliveries(
    endpoint_id: str, session: SessionDep, project: CurrentProject, limit: Limit = 20, after: str | None = None
) -> ListResponse[WebhookDelivery]:
    """Events sent (or being sent) to this endpoint, newest first, each with its attempts."""
    rows, more = svc.list_deliveries(session, project, endpoint_id, limit=limit, after=after)
    return ListResponse[WebhookDelivery].page([delivery_schema(r) for r in rows], more)
