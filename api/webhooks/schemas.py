"""Webhook endpoint and delivery shapes. Events follow OpenAI's webhook payloads, signed per Standard Webhooks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from api.db import models as db

WebhookEventType = Literal[
    "fine_tuning.job.succeeded",
    "fine_tuning.job.failed",
    "fine_tuning.job.cancelled",
    # a job's budget (api.jobs.budget): 80 % of it spent; all of it spent, the job pausing at a checkpoint
    "fine_tuning.job.budget_warning",
    "fine_tuning.job.budget_reached",
]
EVENT_TYPES: tuple[WebhookEventType, ...] = get_args(WebhookEventType)


class WebhookEndpointCreate(BaseModel):
    """Body of ``POST /v1/webhook_endpoints``."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(max_length=2048, description="http(s) URL that receives a signed POST per event.")
    event_types: list[WebhookEventType] = Field(
        default_factory=lambda: list(EVENT_TYPES), min_length=1, description="Events to send; default all."
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        """Checked here so a typo is a 422 naming ``url`` now, not a silent stream of failed deliveries later."""
        try:
            parts = urlsplit(v)
            host = parts.hostname
        except ValueError as exc:
            raise ValueError(f"not a valid URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not host:
            raise ValueError("must be an absolute http:// or https:// URL with a host")
        return v

    @field_validator("event_types")
    @classmethod
    def _dedupe(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))


class WebhookEndpoint(BaseModel):
    """A registered receiver (its signing secret is shown only when it is created)."""

    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    id: str
    url: str
    event_types: list[str]
    created_at: int

    @classmethod
    def from_row(cls, row: db.WebhookEndpoint) -> WebhookEndpoint:
        return cls.model_validate(row.columns())


class WebhookEndpointCreated(WebhookEndpoint):
    secret: str = Field(
        description="Signing secret ('whsec_' + base64): verify webhook-signature with it. Shown only once."
    )


class WebhookEndpointDeleted(BaseModel):
    object: Literal["webhook_endpoint.deleted"] = "webhook_endpoint.deleted"
    id: str
    deleted: bool = True


class DeliveryAttempt(BaseModel):
    attempt: int
    at: int = Field(description="Unix seconds when the attempt was sent.")
    status_code: int | None = Field(description="The receiver's HTTP status; null when no answer came.")
    error: str | None
    duration_ms: int


class WebhookDelivery(BaseModel):
    """One event sent to one endpoint, with every attempt so far."""

    object: Literal["webhook_delivery"] = "webhook_delivery"
    id: str = Field(description="Also the webhook-id header: receivers dedupe on it.")
    endpoint_id: str
    event_type: str
    job_id: str | None
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: int | None = Field(description="When the next attempt is due (pending deliveries only).")
    last_status_code: int | None
    last_error: str | None
    created_at: int
    delivered_at: int | None
    payload: dict[str, Any]
    history: list[DeliveryAttempt]

    @classmethod
    def from_row(cls, row: db.WebhookDelivery) -> WebhookDelivery:
        due = row.next_attempt_at if row.status == "pending" else None
        return cls.model_validate(row.columns() | {"next_attempt_at": due, "history": row.history or []})
