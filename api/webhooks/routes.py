"""Webhook endpoints of the caller's project, and the deliveries (with every attempt) sent to each."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.core.deps import CurrentProject, SessionDep
from api.core.errors import ERROR_RESPONSES
from api.core.pagination import ListResponse
from api.webhooks import service as svc
from api.webhooks.schemas import (
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointCreate,
    WebhookEndpointCreated,
    WebhookEndpointDeleted,
)

router = APIRouter(prefix="/v1/webhook_endpoints", tags=["webhooks"], responses=ERROR_RESPONSES)
Limit = Annotated[int, Query(ge=1, le=100)]


@router.post("", status_code=201)
def create_webhook_endpoint(
    body: WebhookEndpointCreate, session: SessionDep, project: CurrentProject
) -> WebhookEndpointCreated:
    """Register a receiver for job events. The signing ``secret`` is in this response only: store it."""
    row = svc.create_endpoint(session, project, body.url, list(body.event_types))
    return WebhookEndpointCreated(**WebhookEndpoint.from_row(row).model_dump(exclude={"object"}), secret=row.secret)


@router.get("")
def list_webhook_endpoints(session: SessionDep, project: CurrentProject) -> ListResponse[WebhookEndpoint]:
    """This project's endpoints, newest first (secrets are never listed)."""
    endpoints = [WebhookEndpoint.from_row(r) for r in svc.list_endpoints(session, project)]
    return ListResponse[WebhookEndpoint].page(endpoints, False)


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
    page = svc.list_deliveries(session, project, endpoint_id, limit=limit, after=after)
    return ListResponse[WebhookDelivery].page([WebhookDelivery.from_row(r) for r in page.items], page.has_more)
