"""Training sessions, the worker's side (no FastAPI): claim a session, take its next request, post the result,
renew, hand it back; and the reaper's rule for sessions whose worker stopped.

A claim is a guarded UPDATE (an active session no worker holds) that records the worker's claim id; every later
call must carry it (``_held``), so a worker whose lease expired, and whose session the reaper marked lost, can
never write a result: it gets 409 ``stale_claim`` and stops. Each call renews the lease.

What the API records when a result arrives (and only then: nothing half-stored): a save registers its checkpoint
row, replacing an overwritten one; an unnamed save for sampling creates its sampling client.
"""

from __future__ import annotations

import itertools
from typing import Any

from sqlalchemy import null, select, update
from sqlalchemy.orm import Session

from api.checkpoints import service as checkpoints
from api.core.errors import Conflict, InvalidRequest, NotFound
from api.db.models import (
    SamplingSession,
    TrainingRequest,
    TrainingRequestStatus,
    TrainingRun,
    TrainingSession,
    TrainingSessionStatus,
    UsageKind,
    now,
)
from api.db.session import rows_changed
from api.training_api.paths import TinkerPath
from api.training_api.service import fail_open_requests, stored_request
from api.usage import metering
from runtime import training_api as tc
from runtime.internal import Refusal

# The SDK heartbeats every 10 s while its process lives; a session with nothing to do and no heartbeat for this long
# belongs to a client that is gone (a script that ended without closing it), and its worker is freed.
CLIENT_GONE_SECONDS = 60
# A forward_backward's or sample's result (per-token numbers) is kept this long for the client to fetch; its
# metrics stay for the run's series.
RESULT_TTL_SECONDS = 86_400
# How many waiting sessions a pool's claim looks at, oldest first, for one whose base model it holds.
CLAIM_NEXT_CANDIDATES = 32


def claim(db: Session, session_id: str, body: tc.Claim, lease_seconds: int, idle_seconds: int) -> tc.SessionClaim:
    t = now()
    changed = rows_changed(
        db,
        update(TrainingSession)
        .where(
            TrainingSession.id == session_id,
            TrainingSession.status == TrainingSessionStatus.active,
            (TrainingSession.claim_id.is_(None)) | (TrainingSession.claim_id == body.claim_id),  # or a retried claim
        )
        .values(claim_id=body.claim_id, worker_id=body.worker_id, lease_expires_at=t + lease_seconds),
    )
    db.commit()
    if not changed:
        raise Conflict(f"session {session_id} is not claimable", code=Refusal.stale_claim)
    row = db.get(TrainingSession, session_id)
    assert row is not None
    metering.open_attempt(db, _attempt(row))  # a retried claim keeps the row it opened
    if body.shared:
        metering.mark_shared(db, _attempt(row))
    db.commit()
    return tc.SessionClaim(
        session_id=session_id,
        project_id=row.project_id,
        lease_seconds=lease_seconds,
        idle_timeout_seconds=idle_seconds,
    )


def claim_next(db: Session, body: tc.ClaimNext, lease_seconds: int, idle_seconds: int) -> tc.SessionClaim | None:
    """Claim, for a worker's pool of sessions, the session no worker holds that has waited longest and whose first
    pending request needs a base model the worker holds (``base_of``), of the adapter shape it asks for if it asks
    (``shape_of``: a pool of jobs lends its resident to runs of its own shape); None when there is none. Its own
    doorbell, when a worker takes it, finds it held and is dropped (the guarded claim)."""
    waiting = db.scalars(
        select(TrainingSession)
        .where(
            TrainingSession.status == TrainingSessionStatus.active,
            TrainingSession.claim_id.is_(None),
            TrainingSession.enqueued_at.is_not(None),
        )
        .order_by(TrainingSession.enqueued_at, TrainingSession.id)
        .limit(CLAIM_NEXT_CANDIDATES)
    ).all()
    for row in waiting:
        first = db.scalars(
            select(TrainingRequest)
            .where(TrainingRequest.session_id == row.id, TrainingRequest.status == TrainingRequestStatus.pending)
            .order_by(TrainingRequest.seq)
            .limit(1)
        ).first()
        if first is None or base_of(stored_request(first)) not in body.bases:
            continue
        if body.shape is not None and shape_of(stored_request(first)) != body.shape:
            continue
        try:
            body_one = tc.Claim(worker_id=body.worker_id, claim_id=body.claim_id, shared=True)  # a pool's, always
            return claim(db, row.id, body_one, lease_seconds, idle_seconds)
        except Conflict:  # another worker took it meanwhile
            db.rollback()
    db.rollback()
    return None


def base_of(request: tc.Request) -> str | None:
    """The base model a session's first request needs loaded: the one it creates a run of, or samples from; None
    for a request on a run that must already be resident (no pool can take it: only its own worker had it)."""
    match request:
        case tc.CreateModel():
            return request.base.id
        case tc.LoadWeights(create=tc.CreateModel() as create):
            return create.base.id
        case tc.Sample():
            return request.sampler.base.id
    return None


def shape_of(request: tc.Request) -> tc.RunShape | None:
    """The adapter shape of the run a session's first request creates; None when it creates none."""
    match request:
        case tc.CreateModel() as create:
            pass
        case tc.LoadWeights(create=tc.CreateModel() as create):
            pass
        case _:
            return None
    return tc.RunShape(rank=create.rank, train_mlp=create.train_mlp, train_attn=create.train_attn)


def _attempt(row: TrainingSession) -> metering.Attempt:
    """The session's usage row: a session is claimed once and holds one device while leased."""
    return metering.Attempt(UsageKind.session, row.project_id, row.id, 1)


def _held(db: Session, session_id: str, claim_id: str, lease_seconds: int | None) -> TrainingSession:
    """The session this claim holds, its lease renewed (unless ``lease_seconds`` is None: a look that writes
    nothing); 409 ``stale_claim`` when it holds it no longer (a finished session stays held until its worker hands
    it back, so the worker can be told to stop)."""
    row = db.get(TrainingSession, session_id)
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    if row.claim_id != claim_id or row.status not in (TrainingSessionStatus.active, TrainingSessionStatus.finished):
        raise Conflict(f"session {session_id} is {row.status} and not held by this claim", code=Refusal.stale_claim)
    if lease_seconds is not None:
        t = now()
        row.lease_expires_at = t + lease_seconds
        metering.contact(db, _attempt(row))  # device-seconds while leased, to the last renewal
    return row


def heartbeat(db: Session, session_id: str, body: tc.Fenced, lease_seconds: int) -> tc.Ack:
    row = _held(db, session_id, body.claim_id, lease_seconds)
    db.commit()
    return tc.Ack(stop="finished" if row.status == TrainingSessionStatus.finished else None)


def next_request(
    db: Session, session_id: str, claim_id: str, lease_seconds: int | None, max_batch: int = 1
) -> tc.NextAnswer:
    """The session's lowest pending request, now running; or nothing yet (the route waits and asks again, with
    ``lease_seconds`` None: its first ask renewed the lease, the next ones only look). When it is a sample, the
    sample requests pending right after it come too (``more``, up to ``max_batch`` in all), to be decoded
    together: samples change no state, so running them at once keeps every later request's view; the first
    request of another kind ends the run."""
    row = _held(db, session_id, claim_id, lease_seconds)
    if row.status == TrainingSessionStatus.finished:
        db.commit()
        return tc.NextAnswer(stop="finished")
    pending = db.scalars(
        select(TrainingRequest)
        .where(TrainingRequest.session_id == session_id, TrainingRequest.status == TrainingRequestStatus.pending)
        .order_by(TrainingRequest.seq)
        .limit(1)
    ).first()
    if pending is None:
        t = now()
        gone = row.heartbeat_at is not None and row.heartbeat_at < t - CLIENT_GONE_SECONDS
        if gone:  # the client's process ended without closing the session: hand the device back now
            # guarded: a request that arrived since the look above keeps the session (enqueue refreshes the
            # heartbeat in the same transaction as its insert)
            gone = (
                rows_changed(
                    db,
                    update(TrainingSession)
                    .where(
                        TrainingSession.id == session_id,
                        TrainingSession.status == TrainingSessionStatus.active,
                        TrainingSession.heartbeat_at < t - CLIENT_GONE_SECONDS,
                    )
                    .values(
                        status=TrainingSessionStatus.expired,
                        finished_at=t,
                        error={"message": f"expired: its client sent no heartbeat for {CLIENT_GONE_SECONDS} s"},
                    ),
                )
                == 1
            )
            if gone:
                fail_open_requests(db, session_id, f"session {session_id} expired", "user")
        db.commit()
        return tc.NextAnswer(stop="finished" if gone else None)
    if not _take(db, pending):  # failed meanwhile (the session was closed): the next ask finds what is left
        db.commit()
        return tc.NextAnswer()
    more = _samples_after(db, pending, max_batch - 1) if pending.kind == tc.RequestKind.sample else []
    taken = [pending, *(req for req in more if _take(db, req))]
    db.commit()
    items = [tc.WorkItem(id=req.id, target=req.target, request=stored_request(req)) for req in taken]
    return tc.NextAnswer(request=items[0], more=items[1:])


def _samples_after(db: Session, first: TrainingRequest, limit: int) -> list[TrainingRequest]:
    """The sample requests pending right after ``first`` in its session's order, up to ``limit``, stopping at
    the first request of another kind."""
    if limit <= 0:
        return []
    after = db.scalars(
        select(TrainingRequest)
        .where(
            TrainingRequest.session_id == first.session_id,
            TrainingRequest.status == TrainingRequestStatus.pending,
            TrainingRequest.seq > first.seq,
        )
        .order_by(TrainingRequest.seq)
        .limit(limit)
    ).all()
    return list(itertools.takewhile(lambda req: req.kind == tc.RequestKind.sample, after))


def _take(db: Session, req: TrainingRequest) -> bool:
    """``req`` pending -> running, guarded (a close may fail it meanwhile)."""
    return (
        rows_changed(
            db,
            update(TrainingRequest)
            .where(TrainingRequest.id == req.id, TrainingRequest.status == TrainingRequestStatus.pending)
            .values(status=TrainingRequestStatus.running),
        )
        == 1
    )


def post_result(db: Session, session_id: str, request_id: str, body: tc.ResultPost, lease_seconds: int) -> tc.Ack:
    row = _held(db, session_id, body.claim_id, lease_seconds)
    req = db.get(TrainingRequest, request_id)
    if req is None or req.session_id != session_id:
        raise NotFound(f"no request {request_id!r} in session {session_id}")
    if req.status != TrainingRequestStatus.running:  # a retried post of a result already stored, or a request
        db.commit()  # failed meanwhile (its session closed): nothing to write, the renewed lease kept
        return tc.Ack(stop="finished" if row.status == TrainingSessionStatus.finished else None)
    result = body.result if body.error is None else None  # a failed request keeps no result
    if body.error is None and (result is None or result.kind != req.kind):
        got = "no result and no error" if result is None else f"a {result.kind} result"
        raise InvalidRequest(f"request {request_id} is a {req.kind}: its post holds {got}", param="result")
    done = result is not None
    request = stored_request(req)
    t = now()
    bulky = isinstance(request, tc.ForwardBackward | tc.Sample)
    changed = rows_changed(
        db,
        update(TrainingRequest)
        .where(TrainingRequest.id == request_id, TrainingRequest.status == TrainingRequestStatus.running)
        .values(
            status=TrainingRequestStatus.done if done else TrainingRequestStatus.failed,
            result=result.model_dump(mode="json") if result is not None else None,
            metrics=step_metrics(request, result),
            error=body.error.model_dump() if body.error is not None else None,
            finished_at=t,
            # the datums or prompt the worker has read: nothing needs them any more
            payload={} if bulky else req.payload,
            result_expires_at=t + RESULT_TTL_SECONDS if bulky else None,
        ),
    )
    if changed and result is not None:
        _register_checkpoint(db, req, request, result)
    if changed and body.device_seconds > 0:  # billed where the session shares its worker (metering.add_held)
        metering.add_held(db, _attempt(row), body.device_seconds)
    db.commit()
    return tc.Ack(stop="finished" if row.status == TrainingSessionStatus.finished else None)


def step_metrics(request: tc.Request, result: tc.Result | None) -> dict[str, float | None] | None:
    """The few numbers of a training call the run's series is drawn from (api.training_api.runs), kept apart from its
    result (whose per-token log-probs are large): a forward_backward's loss and tokens, an optim_step's."""
    if isinstance(result, tc.OptimStepResult):
        return dict(result.metrics)
    trains = isinstance(request, tc.ForwardBackward) and not request.forward_only
    return dict(result.metrics) if trains and isinstance(result, tc.ForwardBackwardResult) else None


def _register_checkpoint(db: Session, req: TrainingRequest, request: tc.Request, result: tc.Result) -> None:
    """A save that succeeded: its checkpoint row (api.checkpoints.service, the object is in the store now), or, for
    an unnamed save, the sampling client on the weights its worker kept."""
    if not isinstance(request, tc.SaveWeights | tc.SaveForSampler):
        return
    target = request.to
    if target is None:  # an unnamed save: a sampling client of the session, on the weights its worker kept
        run = db.get(TrainingRun, req.target)
        sid = request.sampler_id if isinstance(request, tc.SaveForSampler) else None
        if run is not None and sid is not None and db.get(SamplingSession, sid) is None:
            db.add(
                SamplingSession(
                    id=sid,
                    session_id=req.session_id,
                    project_id=req.project_id,
                    base_model=run.base_model,
                    snapshot_of=run.id,
                )
            )
        return
    path = TinkerPath.parse(target.tinker_path)
    size = result.size_bytes if isinstance(result, tc.SaveWeightsResult | tc.SaveForSamplerResult) else None
    checkpoints.register_run_checkpoint(db, req.project_id, path.run_id, path.kind, path.name, target, size)


def release(db: Session, session_id: str, body: tc.Release) -> tc.Ack:
    """The worker hands the session back: idle (expired), finished by its client, or its worker failed."""
    row = db.get(TrainingSession, session_id)
    if row is None or row.claim_id != body.claim_id:
        return tc.Ack()  # not held by this claim any more: nothing to release
    t = now()
    if row.status == TrainingSessionStatus.active:
        if body.reason == "idle":
            row.status = TrainingSessionStatus.expired
            row.error = {"message": body.message or "expired after its idle timeout"}
            fail_open_requests(db, session_id, f"session {session_id} expired", "user")
        else:
            row.status = TrainingSessionStatus.lost
            row.error = {"message": f"lost its worker: {body.message or 'the worker stopped'}"}
            fail_open_requests(
                db, session_id, f"the worker holding session {session_id} failed: {body.message}", "server"
            )
        row.finished_at = t
    row.claim_id, row.lease_expires_at = None, None
    db.commit()
    return tc.Ack()


def reap(db: Session, stale_before: int) -> list[str]:
    """The reaper's rule for sessions (api.reaper), each change a guarded UPDATE:

    - a session whose worker stopped renewing its lease is lost, and its open requests fail with a server error
      (the client's futures answer; nothing hangs); a finished one is simply let go;
    - a request still open in a session that ended and that no worker holds fails (a backstop: every path that
      ends a session fails them itself);
    - an active session with pending requests and no worker, not rung since ``stale_before``, is rung again;
    - results past their time (RESULT_TTL_SECONDS) are dropped.

    Returns the sessions to ring, after the caller commits."""
    t = now()
    _lose_expired(db, t)
    ended = (  # correlated: the few open requests (by their status index) are looked at, not every session
        select(TrainingSession.id)
        .where(
            TrainingSession.id == TrainingRequest.session_id,
            TrainingSession.status != TrainingSessionStatus.active,
            TrainingSession.claim_id.is_(None),
        )
        .exists()
    )
    db.execute(
        update(TrainingRequest)
        .where(
            TrainingRequest.status.in_([TrainingRequestStatus.pending, TrainingRequestStatus.running]),
            ended,
        )
        .values(
            status=TrainingRequestStatus.failed,
            error={"message": "the session ended before this request ran", "category": "user"},
            finished_at=t,
        )
    )
    db.execute(
        update(TrainingRequest)
        .where(TrainingRequest.result_expires_at < t)
        .values(result=null(), result_expires_at=None)
    )
    waiting = (
        select(TrainingSession.id)
        .where(
            TrainingSession.status == TrainingSessionStatus.active,
            TrainingSession.claim_id.is_(None),
            (TrainingSession.enqueued_at.is_(None)) | (TrainingSession.enqueued_at < stale_before),
        )
        .where(
            select(TrainingRequest.id)
            .where(
                TrainingRequest.session_id == TrainingSession.id,
                TrainingRequest.status == TrainingRequestStatus.pending,
            )
            .exists()
        )
    )
    ring = list(db.scalars(waiting).all())
    if ring:
        db.execute(update(TrainingSession).where(TrainingSession.id.in_(ring)).values(enqueued_at=t))
    return ring


def _lose_expired(db: Session, t: int) -> None:
    """Sessions whose worker stopped renewing its lease: an active one is lost and its open requests fail with a
    server error; a finished one is let go."""
    expired = select(TrainingSession.id, TrainingSession.claim_id, TrainingSession.status, TrainingSession.worker_id)
    expired = expired.where(
        TrainingSession.status.in_([TrainingSessionStatus.active, TrainingSessionStatus.finished]),
        TrainingSession.claim_id.is_not(None),
        TrainingSession.lease_expires_at < t,
    )
    for sid, claim_id, status, worker in db.execute(expired).all():
        guard = (
            (TrainingSession.id == sid)
            & (TrainingSession.claim_id == claim_id)
            & (TrainingSession.lease_expires_at < t)  # not renewed since the look above
        )
        values: dict[str, Any] = {"claim_id": None, "lease_expires_at": None}
        if status == TrainingSessionStatus.active:
            message = f"lost its worker ({worker}): its lease expired, so its models and their unsaved state are gone"
            values |= {"status": TrainingSessionStatus.lost, "finished_at": t, "error": {"message": message}}
        changed = rows_changed(
            db, update(TrainingSession).where(guard, TrainingSession.status == status).values(**values)
        )
        if changed and status == TrainingSessionStatus.active:
            fail_open_requests(
                db,
                sid,
                f"the worker holding session {sid} stopped (lease expired); the session is lost. "
                "Restore from your last save_state in a new ServiceClient.",
                "server",
            )
