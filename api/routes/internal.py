"""Worker endpoints (token-authenticated). Workers hold no database credentials: they talk to these."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Request

from api.deps import SessionDep, SettingsDep, StoreDep, require_worker
from api.errors import ERROR_RESPONSES
from api.queue import enqueue_run_job
from api.services import files as files_svc
from api.services import leases as svc
from runtime import internal as contract
from runtime.internal import (
    CheckpointRequest,
    CheckpointResponse,
    ClaimRequest,
    ClaimResponse,
    EventsRequest,
    EventsResponse,
    Fenced,
    FinishRequest,
    FinishResponse,
    HeartbeatResponse,
    ResumePoint,
)
from runtime.keys import checkpoints_prefix, job_prefix

log = logging.getLogger(__name__)
router = APIRouter(
    prefix=contract.PREFIX,
    tags=["internal"],
    dependencies=[Depends(require_worker)],
    responses=ERROR_RESPONSES,
    include_in_schema=False,
)


@router.post(contract.CLAIM)
def claim(
    job_id: str, body: ClaimRequest, session: SessionDep, settings: SettingsDep, store: StoreDep
) -> ClaimResponse:
    job = svc.claim_job(session, job_id, body.worker_id, body.claim_id, settings.lease_seconds)
    prefix = job_prefix(job.project_id, job.id)
    if job.lease_epoch > 1:  # a new attempt: what the dead ones uploaded but never registered is garbage
        keys = store.list_keys(checkpoints_prefix(prefix))
        for key in svc.orphaned_checkpoint_keys(session, job_id, keys, job.lease_epoch):
            store.delete(key)
    ckpt = svc.last_checkpoint(session, job_id)
    train = files_svc.get_file(session, job.project_id, job.training_file)
    val = files_svc.get_file(session, job.project_id, job.validation_file) if job.validation_file else None
    rl = job.method["reinforcement"]
    return ClaimResponse(
        job_id=job.id,
        epoch=job.lease_epoch,
        lease_expires_at=job.lease_expires_at or 0,
        lease_seconds=settings.lease_seconds,
        model=job.model,
        seed=job.seed,
        hyperparameters=rl["hyperparameters"],
        grader=rl["grader"],
        training_file_key=train.object_key,
        validation_file_key=val.object_key if val else None,
        total_steps=job.total_steps,
        object_prefix=prefix,
        resume=ResumePoint(step=ckpt.step_number, adapter_key=ckpt.object_key, state_key=ckpt.state_key)
        if ckpt is not None and ckpt.state_key
        else None,
    )


@router.post(contract.HEARTBEAT)
def heartbeat(job_id: str, body: Fenced, session: SessionDep, settings: SettingsDep) -> HeartbeatResponse:
    job = svc.heartbeat(session, job_id, body.epoch, settings.lease_seconds)
    stop = svc.stop_request(job)
    return HeartbeatResponse(
        status=job.status, cancel_requested=stop == "cancel", stop=stop, lease_expires_at=job.lease_expires_at or 0
    )


@router.post(contract.EVENTS)
def events(
    job_id: str, body: EventsRequest, request: Request, session: SessionDep, settings: SettingsDep
) -> EventsResponse:
    added, stop = svc.record_events(session, job_id, body.epoch, body.events, settings.lease_seconds)
    steps = sum(1 for e in body.events if e.type == "metrics")
    if steps and added and hasattr(request.app.state, "steps_counter"):
        request.app.state.steps_counter.inc(min(steps, added))
    return EventsResponse(added=added, cancel_requested=stop == "cancel", stop=stop)


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
    job_id: str, body: FinishRequest, request: Request, session: SessionDep, settings: SettingsDep
) -> FinishResponse:
    job, delay = svc.finish_job(
        session,
        job_id,
        body.epoch,
        body.status,
        error_code=body.error_code,
        error_message=body.error_message,
        trained_tokens=body.trained_tokens,
        lease_seconds=settings.lease_seconds,
        retryable=body.retryable,
        retry_base_seconds=settings.retry_backoff_seconds,
    )
    if delay == 0:  # handed back by a worker that shuts down: ring now (if this fails the reaper rings later)
        try:
            enqueue_run_job(request.app.state.producer, job_id)
        except Exception:
            log.exception("could not enqueue %s after its worker shut down; the reaper will", job_id)
    return FinishResponse(status=job.status)
