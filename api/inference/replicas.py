"""The inference fleet's replicas in the database (no FastAPI): the operator's servers registered by URL, and the
servers workers start on demand, with their life as the worker reports it.

On demand. A request for a registered base model that no replica serves asks for one (``request``): a row in state
``requested`` and a doorbell (``serve_model``) on the workers' queue, as for a job; a worker with room claims it,
starts ``python -m worker.inference_server`` and reports it ``starting`` (heartbeats while vLLM loads), then
``ready`` at its URL; while it serves, each report is a heartbeat whose answer says whether to stop: when no request
was routed to it for INFERENCE_IDLE_SECONDS, or when the operator removed it. A replica whose worker went silent for
longer than a lease is ``failed`` (its requests go elsewhere, and the next request asks for a new one); a
requested replica no worker claimed within a minute is rung again (a lost doorbell).

Usage. A started replica's device time is the service's, not a project's: it is metered as kind ``serving`` under
the project ``service``, one row per base model a day (each report adds the seconds since the replica's previous
one), beside the tokens each project's requests are metered by (kind ``inference``).
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from api.core.errors import Conflict, InvalidRequest, NotFound
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import (
    LIVE_REPLICA,
    InferenceReplica,
    ReplicaOrigin,
    ReplicaState,
    UsageKind,
    new_id,
)
from api.db.session import rows_changed
from api.usage import metering
from grpo_core.schemas.endpoints import check_form
from runtime.internal import Refusal
from runtime.serving_contract import ServeAnswer, ServeClaim, ServeClaimRequest, ServeReport

log = logging.getLogger(__name__)
SERVICE_PROJECT = "service"  # whose usage a started replica's device time is (not a project's)
RERING_SECONDS = 60.0  # a requested replica unclaimed this long is rung again
USED_RESOLUTION = 5.0  # last_used_at is written at most this often per replica (a write per request is too many)


def lease_seconds(settings: ApiSettings) -> float:
    """How long a started replica's worker may be silent before the replica counts as gone: three heartbeats."""
    return 3 * heartbeat_seconds(settings)


def heartbeat_seconds(settings: ApiSettings) -> float:
    """How often a serving worker reports: often enough that an idle replica stops close to its timeout."""
    return max(1.0, min(30.0, settings.inference_idle_seconds / 4))


def _silent(settings: ApiSettings, row: InferenceReplica, t: float) -> bool:
    """A started replica whose worker has not reported within the lease (since its claim or last heartbeat)."""
    return (
        row.origin == ReplicaOrigin.started
        and row.last_seen_at is not None
        and row.last_seen_at < t - lease_seconds(settings)
    )


def live(session: Session, settings: ApiSettings, base_model: str | None = None) -> list[InferenceReplica]:
    """The replicas that serve, or will soon (requested, starting, ready), oldest first. A started replica whose
    worker went silent is failed here (a write only then: every API process reads this every few seconds)."""
    t = time.time()
    query = select(InferenceReplica).where(InferenceReplica.state.in_(LIVE_REPLICA))
    if base_model is not None:
        query = query.where(InferenceReplica.base_model == base_model)
    rows = list(session.scalars(query.order_by(InferenceReplica.created_at, InferenceReplica.id)))
    gone = [r.id for r in rows if _silent(settings, r, t)]
    if gone:
        session.execute(
            update(InferenceReplica)
            .where(InferenceReplica.id.in_(gone), InferenceReplica.state.in_(LIVE_REPLICA))
            .values(state=ReplicaState.failed, stopped_at=t, error="its worker stopped reporting")
            .execution_options(synchronize_session=False)
        )
        session.commit()
        log.warning("inference replicas %s failed: their workers stopped reporting", ", ".join(gone))
        rows = [r for r in rows if r.id not in gone]
    return rows


def recent(session: Session, limit: int = 100) -> list[InferenceReplica]:
    """Every replica, newest first (the admin's list: the stopped and failed say why)."""
    query = select(InferenceReplica).order_by(InferenceReplica.created_at.desc(), InferenceReplica.id.desc())
    return list(session.scalars(query.limit(limit)))


def check_url(url: str) -> str:
    """An OpenAI-compatible base URL, ``http(s)://host[:port]/v1``, without a trailing slash; else a 400 (the form
    a grader's own endpoint is held to: grpo_core.schemas.endpoints)."""
    try:
        return check_form(url)
    except ValueError as exc:
        raise InvalidRequest(f"{url!r}: {exc}", param="url", code="invalid_url") from None


def add(session: Session, base_model: str, url: str) -> InferenceReplica:
    """Register an operator's server of ``base_model`` at ``url`` (409 when a live replica has that URL)."""
    url = check_url(url)
    taken = session.scalar(
        select(InferenceReplica.id).where(InferenceReplica.url == url, InferenceReplica.state.in_(LIVE_REPLICA))
    )
    if taken is not None:
        raise Conflict(f"{url} is already the replica {taken}", code="replica_exists")
    t = time.time()
    row = InferenceReplica(
        id=new_id("infr"),
        base_model=base_model,
        origin=ReplicaOrigin.admin,
        state=ReplicaState.ready,
        url=url,
        ready_at=t,
        last_used_at=t,
    )
    session.add(row)
    session.commit()
    log.info("inference replica %s of %s registered at %s", row.id, base_model, url)
    return row


def get(session: Session, replica_id: str) -> InferenceReplica:
    row = session.get(InferenceReplica, replica_id)
    if row is None:
        raise NotFound(f"no inference replica {replica_id!r}", param="replica_id", code="replica_not_found")
    return row


def remove(session: Session, replica_id: str) -> InferenceReplica:
    """Take a replica out of routing: an operator's is stopped at once (its server is the operator's to stop); a
    started one is told to stop at its worker's next report."""
    row = get(session, replica_id)
    if row.state in LIVE_REPLICA:
        started = row.origin == ReplicaOrigin.started and row.state != ReplicaState.requested
        row.state = ReplicaState.stopping if started else ReplicaState.stopped
        row.stop_reason = "removed by the operator"
        if not started:
            row.stopped_at = time.time()
        session.commit()
    return row


def request(session: Session, settings: ApiSettings, queue: Doorbell, base_model: str) -> InferenceReplica:
    """The replica of ``base_model`` that is being started, asking a worker for one where none is (or ringing
    again where its doorbell was lost). Two API processes asking at once may both insert one: the second serves too,
    or stops when idle."""
    t = time.time()
    pending = [r for r in live(session, settings, base_model) if r.state != ReplicaState.ready]
    if pending:
        row = pending[0]
        if row.state == ReplicaState.requested and t - row.last_used_at > RERING_SECONDS:
            row.last_used_at = t
            session.commit()
            _ring(queue, row)
        return row
    row = InferenceReplica(
        id=new_id("infr"),
        base_model=base_model,
        origin=ReplicaOrigin.started,
        state=ReplicaState.requested,
        last_used_at=t,
    )
    session.add(row)
    session.commit()
    log.info("inference replica %s of %s requested (no replica serves it)", row.id, base_model)
    _ring(queue, row)
    return row


def _ring(queue: Doorbell, row: InferenceReplica) -> None:
    try:
        queue.serve(row.id)
    except Exception:  # the broker is down: the next request for the model rings again (RERING_SECONDS)
        log.exception("could not ask a worker to start the replica %s", row.id)


def used(session: Session, replica_ids: list[str]) -> None:
    """Requests were routed to these replicas just now: raise their ``last_used_at`` (what idleness counts from)."""
    if replica_ids:
        t = time.time()
        session.execute(
            update(InferenceReplica)
            .where(InferenceReplica.id.in_(replica_ids), InferenceReplica.last_used_at < t)
            .values(last_used_at=t)
        )
        session.commit()


def claim(session: Session, settings: ApiSettings, replica_id: str, body: ServeClaimRequest) -> ServeClaim:
    """A worker takes a requested replica (or retries its own claim); anything else is 409 ``stale_claim``."""
    t = time.time()
    took = rows_changed(
        session,
        update(InferenceReplica)
        .where(
            InferenceReplica.id == replica_id,
            or_(
                InferenceReplica.state == ReplicaState.requested,
                (InferenceReplica.state == ReplicaState.starting) & (InferenceReplica.claim_id == body.claim_id),
            ),
        )
        .values(
            state=ReplicaState.starting,
            worker_id=body.worker_id,
            claim_id=body.claim_id,
            claimed_at=t,
            last_seen_at=t,
            last_used_at=t,  # its idle time counts from when it could first serve, not from the request's ring
        ),
    )
    if not took:
        raise Conflict(f"the replica {replica_id} is not waiting for a worker", code=Refusal.stale_claim)
    session.commit()
    row = get(session, replica_id)
    log.info("inference replica %s of %s claimed by %s", replica_id, row.base_model, body.worker_id)
    return ServeClaim(
        replica_id=row.id,
        base_model=row.base_model,
        heartbeat_seconds=heartbeat_seconds(settings),
        start_timeout_seconds=settings.inference_start_timeout_seconds,
    )


def report(session: Session, settings: ApiSettings, replica_id: str, body: ServeReport) -> ServeAnswer:
    """A serving worker's report, fenced by its claim: its state moves on, its device time is metered, and the
    answer says whether to stop (idle past the timeout, or removed)."""
    row = session.get(InferenceReplica, replica_id, with_for_update=True)
    if row is None or row.claim_id != body.claim_id or row.state not in (*LIVE_REPLICA, ReplicaState.stopping):
        raise Conflict(f"the replica {replica_id} is not this worker's", code=Refusal.stale_claim)
    t = time.time()
    _meter(session, row, t, metering.kind_of(body.device, body.device_name))
    row.last_seen_at = t
    if body.state in ("stopped", "failed"):
        row.state = ReplicaState.stopped if body.state == "stopped" else ReplicaState.failed
        row.stopped_at, row.error = t, body.error
        row.stop_reason = row.stop_reason or ("the worker stopped" if body.state == "stopped" else "failed to serve")
        session.commit()
        log.info("inference replica %s of %s %s: %s", row.id, row.base_model, row.state, body.error or row.stop_reason)
        return ServeAnswer(stop=True, reason=row.stop_reason)
    if body.state == "ready" and row.state == ReplicaState.starting:
        row.state, row.url, row.ready_at, row.last_used_at = ReplicaState.ready, check_url(body.url or ""), t, t
        log.info("inference replica %s of %s ready at %s", row.id, row.base_model, row.url)
    stop = _stop_reason(settings, row, t)
    if stop is not None and row.state != ReplicaState.stopping:
        row.state, row.stop_reason = ReplicaState.stopping, stop
    session.commit()
    return ServeAnswer(stop=stop is not None, reason=stop)


def _stop_reason(settings: ApiSettings, row: InferenceReplica, t: float) -> str | None:
    if row.state == ReplicaState.stopping:
        return row.stop_reason or "stopping"
    idle = t - row.last_used_at
    if row.state == ReplicaState.ready and idle > settings.inference_idle_seconds:
        return f"idle for {idle:.0f} s (INFERENCE_IDLE_SECONDS={settings.inference_idle_seconds:g})"
    return None


def _meter(session: Session, row: InferenceReplica, t: float, device_kind: str) -> None:
    """Add the seconds since the replica's previous report to its model's ``serving`` row of today."""
    row.device_kind = device_kind[:256]
    since = row.last_seen_at or row.claimed_at or t
    a = metering.Attempt(UsageKind.serving, SERVICE_PROJECT, row.base_model[:512], 0, day=metering.day_of(t))
    metering.add_seconds(session, a, t, max(0.0, t - since), row.device_kind)
