"""``/v1/admin/inference/replicas``: the inference fleet for the operator (ADMIN_TOKEN): every replica of every
base model with its state and, as this API process sees it, its health and load; register an operator's server by
URL, or take one out of routing."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from api.core.deps import SessionDep, require_admin
from api.core.errors import ERROR_RESPONSES, ErrorResponse
from api.db.models import InferenceReplica
from api.inference import replicas
from api.inference.router import Router

_RESPONSES = {**ERROR_RESPONSES, 403: {"model": ErrorResponse, "description": "ADMIN_TOKEN is not configured"}}
admin = APIRouter(
    prefix="/v1/admin/inference/replicas", tags=["admin"], dependencies=[Depends(require_admin)], responses=_RESPONSES
)


class ReplicaAdd(BaseModel):
    base_model: str = Field(min_length=1, max_length=256, description="The base model the server serves.")
    url: str = Field(min_length=1, max_length=512, description="Its OpenAI-compatible base, http://host:port/v1.")


class InferenceReplicaView(BaseModel):
    object: str = "inference.replica"
    id: str = Field(description="infr-… (a database row), or config-… (INFERENCE_BASE_URL, INFERENCE_ENDPOINTS).")
    base_model: str | None = Field(description="None: an INFERENCE_BASE_URL whose model has not answered yet.")
    origin: str = Field(description="config (the settings), admin (registered by URL) or started (on demand).")
    state: str = Field(description="requested, starting, ready, stopping, stopped or failed.")
    url: str | None = None
    worker_id: str | None = Field(None, description="The worker that started it.")
    device_kind: str | None = None
    healthy: bool | None = Field(None, description="Whether its /models answered this API process's last check.")
    problem: str | None = Field(None, description="Why it is skipped, or why it stopped.")
    in_flight: int = Field(0, description="Requests of this API process in flight to it.")
    created_at: int | None = None
    last_used_at: float | None = None


class InferenceReplicaList(BaseModel):
    object: str = "list"
    data: list[InferenceReplicaView]


def _view(row: InferenceReplica, router: Router) -> InferenceReplicaView:
    seen = router.known.replicas.get(row.url or "")
    return InferenceReplicaView(
        id=row.id,
        base_model=row.base_model,
        origin=row.origin,
        state=row.state,
        url=row.url,
        worker_id=row.worker_id,
        device_kind=row.device_kind,
        healthy=seen.healthy if seen is not None else None,
        problem=(seen.problem if seen is not None else None) or row.error or row.stop_reason,
        in_flight=seen.in_flight if seen is not None else 0,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
    )


@admin.get("")
async def list_replicas(request: Request, session: SessionDep) -> InferenceReplicaList:
    """The settings' replicas, then every registered or started one, newest first (the stopped and failed too)."""
    router: Router = request.app.state.inference
    await router.refresh(force=True)
    rows = {r.url: r for r in router.known.replicas.values() if r.id.startswith("config-")}
    config = [
        InferenceReplicaView(
            id=r.id,
            base_model=r.base,
            origin="config",
            state="ready",
            url=url,
            healthy=r.healthy,
            problem=r.problem,
            in_flight=r.in_flight,
        )
        for url, r in rows.items()
    ]
    recorded = await run_in_threadpool(replicas.recent, session)
    return InferenceReplicaList(data=config + [_view(row, router) for row in recorded])


@admin.post("", status_code=201)
async def add_replica(body: ReplicaAdd, request: Request, session: SessionDep) -> InferenceReplicaView:
    """Register an operator's server (``vllm serve`` with run-time LoRA loading, e.g. python -m
    worker.inference_server) of ``base_model``: routed to from the next refresh (seconds)."""
    row = await run_in_threadpool(replicas.add, session, body.base_model, body.url)
    router: Router = request.app.state.inference
    await router.refresh(force=True)
    return _view(row, router)


@admin.delete("/{replica_id}")
async def remove_replica(replica_id: str, request: Request, session: SessionDep) -> InferenceReplicaView:
    """Take a replica out of routing: a registered server at once (stopping it is the operator's), a started one
    at its worker's next report (the worker stops its server)."""
    row = await run_in_threadpool(replicas.remove, session, replica_id)
    router: Router = request.app.state.inference
    await router.refresh(force=True)
    return _view(row, router)
