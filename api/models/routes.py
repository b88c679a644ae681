"""``/v1/models``: the base models workers can fine-tune (the registry, and the operator's catalog folder) and
this project's fine-tuned models, each usable as ``model`` in ``/v1/chat/completions``. ``/v1/admin/models``:
register, inspect and remove base models (ADMIN_TOKEN)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from api.core.deps import CurrentProject, SessionDep, SettingsDep, StoreDep, require_admin
from api.core.errors import ERROR_RESPONSES, ErrorResponse
from api.core.settings import ApiSettings
from api.models import service
from api.models.schemas import Model, ModelDetail, ModelList, ModelRegister
from api.models.served import Fleet, fine_tuned_models

router = APIRouter(prefix="/v1/models", tags=["models"])
_ADMIN_RESPONSES = {**ERROR_RESPONSES, 403: {"model": ErrorResponse, "description": "ADMIN_TOKEN is not configured"}}
admin = APIRouter(
    prefix="/v1/admin/models", tags=["admin"], dependencies=[Depends(require_admin)], responses=_ADMIN_RESPONSES
)


@router.get("")
async def list_base_models(
    request: Request, settings: SettingsDep, session: SessionDep, project: CurrentProject
) -> ModelList:
    """Base models (``owned_by: system``, with the registry's metadata), then this project's fine-tuned models,
    newest first; each says whether the inference fleet serves it now (``serving``)."""
    inference: Fleet = request.app.state.inference  # api.inference.router.Router
    await inference.refresh()
    base, tuned = await run_in_threadpool(_models, session, settings, project)
    for m in base:
        m.serving = inference.serving(m.id)
    for m in tuned:
        m.serving = inference.serving(m.parent or "")
    return ModelList(data=base + tuned)


def _models(session: Session, settings: ApiSettings, project: str) -> tuple[list[Model], list[Model]]:
    base = [
        Model.registered(e.row) if e.row is not None else Model(id=e.id, source="catalog")
        for e in service.available(session, settings).values()
    ]
    tuned = [
        Model(id=name, created=created, owned_by=project, parent=parent)
        for name, parent, created in fine_tuned_models(session, project)
    ]
    return base, tuned


@admin.post("", status_code=201)
async def register_model(body: ModelRegister, session: SessionDep, store: StoreDep) -> ModelDetail:
    """Register a base model: inspected without loading its weights (400 naming what a causal LM with a tokenizer
    lacks), its files uploaded to the object store, then its row added (409 if the id is taken)."""
    row = await run_in_threadpool(service.register, session, store, body.source, model_id=body.id, hub_id=body.hub_id)
    return ModelDetail.detail(row)


@admin.get("/{model_id}")
def get_model(model_id: str, session: SessionDep) -> ModelDetail:
    return ModelDetail.detail(service.get(session, model_id))


@admin.delete("/{model_id}")
def remove_model(model_id: str, session: SessionDep, store: StoreDep) -> ModelDetail:
    """Remove a registered model (409 while an unfinished job trains on it); workers' caches evict it by LRU."""
    return ModelDetail.detail(service.remove(session, store, model_id))
