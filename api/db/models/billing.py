"""What changed in money (api.billing): every change of prices or budgets, who made it, and from what to what."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class BillingChange(Base):
    """One change of a price sheet or a budget (a project's, the job's), kept for the operator's audit
    (``GET /v1/admin/billing/changes``): an override of a budget is never silent."""

    __tablename__ = "billing_changes"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "bill-…"
    created_at: Mapped[int] = mapped_column(BigInteger, default=now, index=True)
    project_id: Mapped[str] = mapped_column(String(64), index=True)
    subject: Mapped[str] = mapped_column(String(128))  # "project:proj-…" or "job:ftjob-…"
    field: Mapped[str] = mapped_column(String(32))  # "prices", "monthly_budget", "budget"
    before: Mapped[Any] = mapped_column(JSON, nullable=True)
    after: Mapped[Any] = mapped_column(JSON, nullable=True)
    actor: Mapped[str] = mapped_column(String(64))  # "admin-api", "admin-cli", or the project's key id
