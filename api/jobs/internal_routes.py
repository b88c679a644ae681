"""Worker endpoints (runtime.internal is the contract; token-authenticated). Workers hold no database credentials:
they talk to these. Every write after the claim is fenced by the lease epoch (api.jobs.leases); the nodes of a
multi-node attempt meet through rendezvous and join (api.jobs.rendezvous)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from api.core.deps import QueueDep, SessionDep, SettingsDep, StoreDep, require_worker
from api.core.errors import ERROR_RESPONSES
from api.jobs import claims, readiness, rendezvous
from api.jobs import leases as svc
from runtime import internal as contract
from runtime.internal import (
    CheckpointRequest,
    CheckpointResponse,
    ClaimNextRequest,
    ClaimNextResponse,
    ClaimRequest,
    ClaimResponse,
    EventsRequest,
    EventsResponse,
    ExecutionRequest,
    Fenced,
    FinishRequest,
    FinishResponse,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    ReadinessRequest,
    RendezvousRequest,
)

router = APIRouter(
    prefix=contract.PREFIX,
    tags=["internal"],
    dependencies=[Depends(require_worker)],
    responses=ERROR_RESPONSES,
    include_in_schema=False,
)


@router.post(contract.CLAIM_NEXT)
def claim_next(
    body: ClaimNextRequest, session: SessionDep, settings: SettingsDep, store: StoreDep, queue: QueueDep
) -> ClaimNextResponse:
    """The next job this worker can run, chosen by the API (api.jobs.scheduling); null when there is none."""
    return ClaimNextResponse(claim=claims.claim_next(session, store, queue, settings, body))


@router.post(contract.CLAIM)
def claim(
    job_id: str, body: ClaimRequest, session: SessionDep, settings: SettingsDep, store: StoreDep
) -> ClaimResponse:
    return claims.claim(session, store, settings, job_id, body.worker_id, body.claim_id)


@router.post(contract.HEARTBEAT)
def heartbeat(job_id: str, body: Fenced, session: SessionDep, settings: SettingsDep) -> HeartbeatResponse:
    job = svc.heartbeat(session, job_id, body.epoch, settings.lease_seconds)
    stop = svc.stop_request(job)
    return HeartbeatResponse(status=job.status, stop=stop, lease_expires_at=job.lease_expires_at or 0)


@router.post(contract.EVENTS)
def events(
    job_id: str, body: EventsRequest, request: Request, session: SessionDep, settings: SettingsDep
) -> EventsResponse:
    added, steps, stop = svc.record_events(session, settings, job_id, body.epoch, body.events)
    request.app.state.steps_counter.inc(steps)
    return EventsResponse(added=added, stop=stop)


@router.post(contract.EXECUTION)
def execution(job_id: str, body: ExecutionRequest, session: SessionDep, settings: SettingsDep) -> HeartbeatResponse:
    """The worker's resolved execution settings; answered like a heartbeat (it renews the lease too)."""
    job = svc.record_execution(session, job_id, body.epoch, body.execution, settings.lease_seconds)
    stop = svc.stop_request(job)
    return HeartbeatResponse(status=job.status, stop=stop, lease_expires_at=job.lease_expires_at or 0)


@router.post(contract.READINESS)
def readiness_report(
    job_id: str, body: ReadinessRequest, session: SessionDep, settings: SettingsDep
) -> HeartbeatResponse:
    """A readiness probe's report (before or after training); answered like a heartbeat."""
    job = readiness.record(session, job_id, body, settings.lease_seconds)
    return HeartbeatResponse(status=job.status, stop=svc.stop_request(job), lease_expires_at=job.lease_expires_at or 0)


@router.post(contract.CHECKPOINTS)
def checkpoint(job_id: str, body: CheckpointRequest, session: SessionDep, settings: SettingsDep) -> CheckpointResponse:
    ckpt = svc.register_checkpoint(
        session,
        job_id,
        body.epoch,
        body.step_number,
        body.object_key,
        body.state_key,
        body.metrics,
        settings.lease_seconds,
    )
    return CheckpointResponse(id=ckpt.id)


@router.post(contract.FINISH)
def finish(
    job_id: str, body: FinishRequest, session: SessionDep, settings: SettingsDep, queue: QueueDep
) -> FinishResponse:
    return FinishResponse(status=svc.finish(session, queue, settings, job_id, body).status)


@router.post(contract.RENDEZVOUS)
def publish_rendezvous(
    job_id: str, body: RendezvousRequest, session: SessionDep, settings: SettingsDep, queue: QueueDep
) -> HeartbeatResponse:
    """Node 0 of a multi-node attempt says where its rendezvous listens; answered like a heartbeat."""
    job = rendezvous.publish(session, queue, settings, job_id, body.epoch, body.endpoint)
    stop = svc.stop_request(job)
    return HeartbeatResponse(status=job.status, stop=stop, lease_expires_at=job.lease_expires_at or 0)


@router.post(contract.JOIN)
def join(job_id: str, body: JoinRequest, session: SessionDep, settings: SettingsDep) -> JoinResponse:
    return rendezvous.join(session, settings, job_id, body.epoch, body.worker_id)
