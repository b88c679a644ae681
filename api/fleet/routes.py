"""``GET /v1/admin/fleet``: the workers holding work now, each with its jobs and sessions (how many tenants share
it, of which base models) or the inference replica it serves, and what waits for a worker.

A worker is what a lease names (``worker_id``: host and process); one holds a job or a session while its lease is
live, so a worker that died drops out of the list when its leases expire, before the reaper hands its work on."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.core.deps import ReadSessionDep, require_admin
from api.core.errors import ERROR_RESPONSES, ErrorResponse
from api.db.models import (
    InferenceReplica,
    Job,
    JobStatus,
    ReplicaOrigin,
    ReplicaState,
    TrainingRun,
    TrainingSession,
    TrainingSessionStatus,
    job_leased,
    now,
    session_held,
)

_RESPONSES = {**ERROR_RESPONSES, 403: {"model": ErrorResponse, "description": "ADMIN_TOKEN is not configured"}}
admin = APIRouter(prefix="/v1/admin/fleet", tags=["admin"], dependencies=[Depends(require_admin)], responses=_RESPONSES)


class FleetWorker(BaseModel):
    worker_id: str = Field(description="The worker process (host:pid) as its leases name it.")
    jobs: int = Field(description="Jobs it trains now (node 0 of a multi-node job).")
    sessions: int = Field(description="Training-API sessions it serves now.")
    tenants: int = Field(description="Jobs and sessions together: more than 1 is a pool sharing its device.")
    base_models: list[str] = Field(description="The base models its jobs and sessions' runs train.")
    serving: list[str] = Field(
        default_factory=list,
        description="The base models it serves as an inference replica started on demand (it trains nothing "
        "meanwhile); its device time is usage of kind serving.",
    )
    projects: int = Field(description="How many projects its tenants belong to.")


class Fleet(BaseModel):
    object: str = "fleet"
    workers: list[FleetWorker] = Field(description="Workers holding work now, the most tenants first.")
    queued_jobs: int = Field(description="Jobs waiting for a worker.")
    waiting_sessions: int = Field(description="Active sessions with work pending and no worker.")


@admin.get("")
def get_fleet(session: ReadSessionDep) -> Fleet:
    """Every worker holding a live lease on a job or a training session, with its tenants."""
    return fleet(session)


@dataclass
class _Tally:
    jobs: int = 0
    sessions: int = 0
    bases: set[str] = field(default_factory=set)
    projects: set[str] = field(default_factory=set)
    serving: set[str] = field(default_factory=set)


def fleet(db: Session) -> Fleet:
    t = now()
    tally: dict[str, _Tally] = defaultdict(_Tally)
    live_jobs = select(Job.worker_id, Job.model, Job.project_id).where(*job_leased(t))
    for worker, model, project in db.execute(live_jobs):
        w = tally[str(worker)]
        w.jobs += 1
        w.bases.add(model)
        w.projects.add(project)
    live_sessions = select(TrainingSession.id, TrainingSession.worker_id, TrainingSession.project_id).where(
        *session_held(t)
    )
    held: dict[str, _Tally] = {}  # session id -> its worker's tally
    for sid, worker, project in db.execute(live_sessions):
        w = held[sid] = tally[str(worker)]
        w.sessions += 1
        w.projects.add(project)
    if held:
        runs = select(TrainingRun.session_id, TrainingRun.base_model).where(TrainingRun.session_id.in_(list(held)))
        for sid, base in db.execute(runs):
            held[sid].bases.add(base)
    serving = select(InferenceReplica.worker_id, InferenceReplica.base_model).where(
        InferenceReplica.origin == ReplicaOrigin.started,
        InferenceReplica.state.in_((ReplicaState.starting, ReplicaState.ready, ReplicaState.stopping)),
    )
    for worker, base in db.execute(serving):
        tally[str(worker)].serving.add(base)
    workers = [
        FleetWorker(
            worker_id=worker,
            jobs=w.jobs,
            sessions=w.sessions,
            tenants=w.jobs + w.sessions,
            base_models=sorted(w.bases),
            serving=sorted(w.serving),
            projects=len(w.projects),
        )
        for worker, w in tally.items()
    ]
    workers.sort(key=lambda w: (-w.tenants, w.worker_id))
    queued = db.scalar(select(func.count()).select_from(Job).where(Job.status == JobStatus.queued))
    waiting = db.scalar(
        select(func.count())
        .select_from(TrainingSession)
        .where(TrainingSession.status == TrainingSessionStatus.active, TrainingSession.claim_id.is_(None))
    )
    return Fleet(workers=workers, queued_jobs=int(queued or 0), waiting_sessions=int(waiting or 0))
