from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel

from api.deps import CurrentProject, SettingsDep
from grpo_core.models import list_models

router = APIRouter(prefix="/v1/models", tags=["models"])


class Model(BaseModel):
    object: Literal["model"] = "model"
    id: str
    owned_by: str = "system"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


@router.get("")
def list_base_models(settings: SettingsDep, project: CurrentProject) -> ModelList:
    """Base models workers can fine-tune (the model catalog)."""
    return ModelList(data=[Model(id=m) for m in list_models(settings.models_dir)])
