from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from api.db import models as db


class FileObject(BaseModel):
    """An uploaded JSONL dataset (OpenAI's ``file`` object, plus row count and sha256)."""

    object: Literal["file"] = "file"
    id: str
    bytes: int
    created_at: int
    filename: str
    purpose: str
    status: Literal["processed"] = "processed"
    row_count: int = Field(description="Training rows in the file (non-blank lines).")
    sha256: str = Field(description="SHA-256 of the uploaded bytes.")

    @classmethod
    def from_row(cls, row: db.File) -> FileObject:
        return cls.model_validate(row.columns())


class FileDeleted(BaseModel):
    """Answer of ``DELETE /v1/files/{file_id}`` (OpenAI's shape)."""

    id: str
    object: Literal["file"] = "file"
    deleted: bool = True
