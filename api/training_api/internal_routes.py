"""``/internal/training``: what the worker holding a training session calls (worker token, not in the public
spec): claim the session, take its next request (held open up to ``wait_seconds`` while there is none), post each
result, renew, hand it back. Each call after the claim is fenced by the claim id (api.training_api.leases; the
contract: runtime.training_api). ``next`` wakes when this process enqueues a request of the session
(api.core.wakeups); a posted result wakes its client's ``retrieve_future`` the same way."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from api.core.deps import QueueDep, SessionDep, SettingsDep, require_worker
from api.core.wakeups import request_key, session_key, wait
from api.training_api import leases
from runtime import training_api as contract

router = APIRouter(
    prefix=contract.PREFIX, tags=["internal"], dependencies=[Depends(require_worker)], include_in_schema=False
)


@router.post(contract.CLAIM)
def claim(session_id: str, body: contract.Claim, db: SessionDep, settings: SettingsDep) -> contract.SessionClaim:
    return leases.claim(db, session_id, body, settings.training_lease_seconds, settings.training_idle_timeout_seconds)


@router.post(contract.CLAIM_NEXT)
def claim_next(body: contract.ClaimNext, db: SessionDep, settings: SettingsDep) -> contract.ClaimNextAnswer:
    claim = leases.claim_next(db, body, settings.training_lease_seconds, settings.training_idle_timeout_seconds)
    return contract.ClaimNextAnswer(claim=claim)


@router.post(contract.NEXT)
async def next_request(
    session_id: str, body: contract.NextRequest, request: Request, settings: SettingsDep
) -> contract.NextAnswer:
    """The next request, or nothing after ``wait_seconds`` (the worker asks again, or hands the session back when
    it has been idle too long). Each look is a short transaction of its own in the threadpool."""
    deadline = time.monotonic() + body.wait_seconds
    pause = 0.05
    renew: int | None = settings.training_lease_seconds  # the first look renews the lease, the others only look

    def look() -> contract.NextAnswer:
        with request.app.state.sessionmaker() as db:
            return leases.next_request(db, session_id, body.claim_id, renew, body.max_batch)

    with request.app.state.queue.wakeups.watch(session_key(session_id)) as woken:  # an enqueue here wakes it
        while True:
            answer = await run_in_threadpool(look)
            renew = None
            if answer.request is not None or answer.stop is not None or time.monotonic() + pause > deadline:
                return answer
            await wait(woken, pause)
            pause = min(pause * 1.5, 0.5)


@router.post(contract.RESULT)
def post_result(
    session_id: str,
    request_id: str,
    body: contract.ResultPost,
    db: SessionDep,
    settings: SettingsDep,
    queue: QueueDep,
) -> contract.Ack:
    ack = leases.post_result(db, session_id, request_id, body, settings.training_lease_seconds)
    queue.wake(request_key(request_id))  # its client, waiting in this process for the result
    return ack


@router.post(contract.HEARTBEAT)
def heartbeat(session_id: str, body: contract.Fenced, db: SessionDep, settings: SettingsDep) -> contract.Ack:
    return leases.heartbeat(db, session_id, body, settings.training_lease_seconds)


@router.post(contract.RELEASE)
def release(session_id: str, body: contract.Release, db: SessionDep) -> contract.Ack:
    return leases.release(db, session_id, body)
