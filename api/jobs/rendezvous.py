"""One attempt of a multi-node job (``resources.nodes`` > 1): the claiming node publishes, the others join.

The worker that claims the job is node 0: its torchrun hosts the c10d rendezvous store, and it publishes where
(``publish``, fenced like every other write of the attempt). The API rings ``nodes - 1`` join doorbells
(runtime.queue.JOIN_JOB) after the commit; each worker that takes one asks to join (``join``) and gets the
attempt's spec, the endpoint and its node rank, 1 … nodes - 1 in join order. A retried join of the same worker
gets the same rank back; a join beyond ``nodes - 1``, for an older epoch or once the attempt is over is 409
``not_claimable`` (the joining worker stops quietly). A new claim (the next attempt) clears the rendezvous.
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from api.core.errors import Conflict, NotFound
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import ACTIVE, Job
from api.db.session import rows_changed
from api.jobs.claims import claim_response, job_resources
from api.jobs.events import add_event
from api.jobs.leases import fence
from runtime.internal import JoinResponse, Refusal

log = logging.getLogger(__name__)


def publish(session: Session, queue: Doorbell, settings: ApiSettings, job_id: str, epoch: int, endpoint: str) -> Job:
    """Record where attempt ``epoch`` rendezvouses and call the other nodes (after the commit). A retry with the
    same endpoint rings again for the nodes that have not joined yet (so a lost doorbell can be made good); another
    endpoint for the same attempt is 409 ``rendezvous_published``, and a one-node job has nothing to publish."""
    current = session.get(Job, job_id)
    if current is not None and job_resources(current).nodes == 1:
        raise Conflict(
            f"job {job_id} trains on one node (resources.nodes = 1): there is no rendezvous for other nodes to join",
            code=Refusal.single_node,
        )
    job = fence(session, job_id, epoch, settings.lease_seconds)
    nodes = job_resources(job).nodes
    missing = nodes - 1 - len(job.rendezvous_nodes or [])
    if job.rendezvous_endpoint is None:
        # the fenced UPDATE above holds the row (the database's write lock on SQLite) until this commit
        job.rendezvous_endpoint = endpoint
        plural = "s" if missing > 1 else ""
        # the endpoint (a worker's internal address) stays out of the job's events, which the project reads
        add_event(session, job_id, f"Waiting for {missing} more node{plural} to join the job's rendezvous")
    elif job.rendezvous_endpoint != endpoint:
        published = job.rendezvous_endpoint
        session.rollback()
        raise Conflict(
            f"attempt {epoch} of job {job_id} already rendezvouses at {published}; a new rendezvous needs a new "
            "attempt",
            code=Refusal.rendezvous_published,
        )
    session.commit()
    # Queue after commit: a joining worker always finds the endpoint it was called for.
    for rung in range(missing):
        try:
            queue.join(job_id, epoch)
        except Exception as exc:  # broker down: the nodes do not come, torchrun times out, the attempt is retried
            log.exception("could not ring the join doorbells of %s", job_id)
            add_event(
                session,
                job_id,
                f"Could not reach the job queue to call {missing - rung} more node(s) ({type(exc).__name__})",
                level="warn",
            )
            session.commit()
            break
    return job


def join(session: Session, settings: ApiSettings, job_id: str, epoch: int, worker_id: str) -> JoinResponse:
    """Give ``worker_id`` the next node rank of attempt ``epoch`` (the same one again on a retry)."""
    # Each pass either answers or loses the slot it read to a concurrent join, which can happen at most nodes - 1
    # times per attempt: the loop ends.
    while True:
        # FOR UPDATE queues concurrent joins on the job row (PostgreSQL); SQLite ignores it, the length guard below
        # makes the loser of the same race re-read instead.
        job = session.scalar(
            select(Job).where(Job.id == job_id).with_for_update().execution_options(populate_existing=True)
        )
        if job is None:
            raise NotFound(f"no job {job_id!r}", param="job_id")
        nodes = job_resources(job).nodes
        joined: list[str] = list(job.rendezvous_nodes or [])
        refusal = _refusal(job, epoch, worker_id, joined, nodes)
        if refusal is not None:
            session.rollback()
            raise Conflict(refusal, code=Refusal.not_claimable)
        endpoint = job.rendezvous_endpoint
        if worker_id in joined:
            rank = joined.index(worker_id) + 1
            session.commit()  # nothing to write: release the row
            break
        taken = rows_changed(
            session,
            update(Job)
            .where(
                Job.id == job_id,
                Job.lease_epoch == epoch,
                Job.status.in_(list(ACTIVE)),
                func.coalesce(func.json_array_length(Job.rendezvous_nodes), 0) == len(joined),
            )
            .values(rendezvous_nodes=[*joined, worker_id]),
        )
        if taken == 1:
            rank = len(joined) + 1
            add_event(session, job_id, f"Node {rank} of {nodes} joined (worker {worker_id})")
            session.commit()
            break
        session.rollback()
    assert endpoint is not None  # _refusal saw it
    spec = claim_response(session, settings, job, with_secrets=False)  # no rank 0 there, so no tracker: no secrets
    return JoinResponse(job=spec, endpoint=endpoint, node_rank=rank)


def _refusal(job: Job, epoch: int, worker_id: str, joined: list[str], nodes: int) -> str | None:
    """Why ``worker_id`` cannot be a node of attempt ``epoch`` now (None: it can)."""
    if job.status not in ACTIVE:
        return f"job {job.id} is {job.status}: its attempt {epoch} is over"
    if job.lease_epoch != epoch:
        return f"attempt {epoch} of job {job.id} is over (the job is on attempt {job.lease_epoch})"
    if job.rendezvous_endpoint is None:
        return f"attempt {epoch} of job {job.id} has published no rendezvous to join"
    if worker_id not in joined and len(joined) >= nodes - 1:
        return f"all {nodes} nodes of attempt {epoch} of job {job.id} are taken"
    return None
