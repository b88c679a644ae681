"""``/internal/models``: what a worker-side process (the inference server's launcher, a worker's model cache) asks:
where a registered model's files are (token-authenticated, not in the public spec)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.core.deps import SessionDep, require_worker
from api.models import service
from runtime.internal import ModelSource

router = APIRouter(
    prefix="/internal/models", tags=["internal"], dependencies=[Depends(require_worker)], include_in_schema=False
)


@router.get("/{model_id}")
def model_source(model_id: str, session: SessionDep) -> ModelSource:
    """A registered model's files (404 ``model_not_found`` when it is not registered)."""
    return service.source_of(service.get(session, model_id))
