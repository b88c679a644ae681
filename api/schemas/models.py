"""OpenAI's ``model`` list: the base models workers can fine-tune, and the caller's fine-tuned models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Model(BaseModel):
    object: Literal["model"] = "model"
    id: str
    created: int = Field(0, description="Unix seconds: when a fine-tuned model's job finished; 0 for a base model.")
    owned_by: str = Field("system", description="'system' for a base model, the project's id for a fine-tuned one.")
    parent: str | None = Field(None, description="A fine-tuned model's base model.")


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]
