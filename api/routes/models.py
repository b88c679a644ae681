"""``/v1/models``: the base models workers can fine-tune (the model catalog)."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CurrentProject, SettingsDep
from api.schemas.models import Model, ModelList
from grpo_core.models import list_models

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.get("")
def list_base_models(settings: SettingsDep, project: CurrentProject) -> ModelList:
    """Base models workers can fine-tune (the model catalog)."""
    return ModelList(data=[Model(id=m) for m in list_models(settings.models_dir)])
