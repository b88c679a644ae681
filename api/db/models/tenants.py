"""Projects (tenants) and their API keys (api.tenants; a key is resolved by api.core.callers)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now

DEFAULT_PROJECT = "proj-default"


class Project(Base):
    """A tenant: every file, job and webhook endpoint belongs to one, and an API key opens exactly one."""

    __tablename__ = "projects"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "proj-…"; DEFAULT_PROJECT is seeded
    name: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    # The fleet's share (api.jobs.scheduling), set by an admin: fair-share weight (twice the weight, twice the
    # device-time), the highest job priority it may ask for, its running-job limit (null: the service default).
    share_weight: Mapped[float] = mapped_column(Float, default=1.0, server_default="1")
    max_priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    max_running_jobs: Mapped[int | None] = mapped_column(Integer)
    # Money (api.billing), set by an admin: the project's own prices over the service's (api.billing.prices.
    # PriceSheet as JSON; null: the service's), and its monthly budget in the price unit (null: none).
    prices: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    monthly_budget: Mapped[float | None] = mapped_column(Float)


class ApiKey(Base):
    """A project's API key. Only its SHA-256 is stored: the key itself is shown once, when it is created."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "key-…": what admins list and revoke
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    name: Mapped[str | None] = mapped_column(String(256))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)  # sha256 hex of the whole key
    hint: Mapped[str] = mapped_column(String(32))  # "rft_…abcd": enough to recognise a key, useless to use it
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    last_used_at: Mapped[int | None] = mapped_column(BigInteger)  # refreshed at most once a minute
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)
