"""Project secret shapes. Write-only: ``SecretCreate`` takes a value, and no shape here has a field that could
carry one back (a name, a hint, timestamps)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from grpo_core.schemas.graders import SECRET_NAME_PATTERN

if TYPE_CHECKING:
    from api.db.models import ProjectSecret

MAX_VALUE_CHARS = 4096  # an API key or a token, with room; not a place for files


class SecretCreate(BaseModel):
    """Body of ``POST /v1/secrets``: writes the secret, or rotates it when the name exists."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=SECRET_NAME_PATTERN,
        description="1 to 64 letters, digits, `_`, `.` or `-`; what a job's integrations name it by "
        '(`{"type": "wandb", "api_key_secret": NAME}`), and a score_model grader the key of its own endpoint by '
        '(`"api_key_secret": NAME` beside `endpoint`). Writing an existing name replaces its value.',
    )
    value: SecretStr = Field(
        min_length=1,
        max_length=MAX_VALUE_CHARS,
        description="The secret itself (e.g. a W&B API key). Stored encrypted; never returned by any route.",
    )


class Secret(BaseModel):
    """A project secret as the API shows it: never its value."""

    object: Literal["secret"] = "secret"
    name: str
    hint: str = Field(
        description="Enough to recognise it, never to use it: '…' and its last 4 characters (a value shorter than 16 "
        "characters: only its length)."
    )
    created_at: int
    updated_at: int = Field(description="When its value was last written (rotated).")

    @classmethod
    def from_row(cls, row: ProjectSecret) -> Secret:
        return cls(name=row.name, hint=row.hint, created_at=row.created_at, updated_at=row.updated_at)


class SecretDeleted(BaseModel):
    object: Literal["secret.deleted"] = "secret.deleted"
    name: str
    deleted: bool = True
