"""The secrets a project's jobs may name (api.secrets)."""

from __future__ import annotations

from sqlalchemy import BigInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from api.db.models.base import Base, now


class ProjectSecret(Base):
    """A project's named secret (``POST /v1/secrets``): the value encrypted at rest (Fernet, a key from the
    settings), never returned; ``hint`` is enough to recognise it. Re-writing a name rotates it."""

    __tablename__ = "project_secrets"

    project_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    ciphertext: Mapped[str] = mapped_column(Text)
    hint: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[int] = mapped_column(BigInteger, default=now)
    updated_at: Mapped[int] = mapped_column(BigInteger, default=now)
