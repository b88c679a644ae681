"""``/v1/models``: the base models workers can fine-tune (the model catalog) and this project's fine-tuned models,
each usable as ``model`` in ``/v1/chat/completions``."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CurrentProject, SessionDep, SettingsDep
from api.schemas.models import Model, ModelList
from api.services.served_models import fine_tuned_models
from grpo_core.models import list_models

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.get("")
def list_base_models(settings: SettingsDep, session: SessionDep, project: CurrentProject) -> ModelList:
    """Base models (``owned_by: system``), then this project's fine-tuned models, newest first."""
    base = [Model(id=m) for m in list_models(settings.models_dir)]
    tuned = [
        Model(id=name, created=created, owned_by=project, parent=parent)
        for name, parent, created in fine_tuned_models(session, project)
    ]
    return ModelList(data=base + tuned)
