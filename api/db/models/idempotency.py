"""What an ``Idempotency-Key`` replays (api.core.idempotency_store)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class IdempotencyKey(Base):
    """Stripe-style idempotency: the first response to (project, key) is replayed for the same request."""

    __tablename__ = "idempotency_keys"

    project_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    method_path: Mapped[str] = mapped_column(String(300))
    request_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the body (and file bytes for uploads)
    status_code: Mapped[int | None] = mapped_column(Integer)  # None while the first request is in flight
    response: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, default=now, index=True)
