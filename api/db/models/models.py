"""The base-model registry (api.models)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class RegisteredModel(Base):
    """A base model in the registry (api.models.service): its files live in the object store under
    ``object_prefix``, one row of metadata here. Workers fetch it by ``digest`` into their node's cache."""

    __tablename__ = "base_models"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)  # what jobs name as `model`
    source: Mapped[str] = mapped_column(String(1024))  # where it was registered from (a folder, s3://…, hf://…)
    hub_id: Mapped[str | None] = mapped_column(String(256))  # "org/name": what a trained adapter names as its base
    architecture: Mapped[str] = mapped_column(String(128))
    model_type: Mapped[str] = mapped_column(String(64))
    parameter_count: Mapped[int | None] = mapped_column(BigInteger)
    dtype: Mapped[str | None] = mapped_column(String(32))
    context_length: Mapped[int | None] = mapped_column(Integer)
    chat_template: Mapped[bool] = mapped_column(Boolean)
    license: Mapped[str | None] = mapped_column(Text)
    files: Mapped[list[Any]] = mapped_column(JSON)  # [{"name", "size", "sha256"}]
    digest: Mapped[str] = mapped_column(String(64), index=True)  # grpo_core.models.files.manifest_digest
    size: Mapped[int] = mapped_column(BigInteger)
    object_prefix: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
