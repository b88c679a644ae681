"""Webhook endpoints and their deliveries (api.webhooks)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class WebhookEndpoint(Base):
    """Where a project's job events are delivered (Standard Webhooks: signed with this endpoint's secret)."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    url: Mapped[str] = mapped_column(String(2048))
    secret: Mapped[str] = mapped_column(String(128))  # "whsec_" + base64, shown once at creation
    event_types: Mapped[list[Any]] = mapped_column(JSON)
    disabled: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)


class WebhookDelivery(Base):
    """One event for one endpoint, retried with backoff until delivered or given up; attempts are listed."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # also the webhook-id header (dedupe key)
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), index=True)
    job_id: Mapped[str | None] = mapped_column(String(64), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)  # pending|delivered|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[int] = mapped_column(BigInteger, default=now)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    history: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [{"at", "status_code", "error"}]
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    delivered_at: Mapped[int | None] = mapped_column(BigInteger)
