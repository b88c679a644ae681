"""Base models a worker can fine-tune (OpenAI's ``model`` list shape)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Model(BaseModel):
    object: Literal["model"] = "model"
    id: str
    owned_by: str = "system"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]
