"""A checkpoint's row (no FastAPI): registered once its object is in the store (the row insert is the commit point:
until then nothing names the object), looked up, listed, deleted; for a job (``Checkpoint``, one per step) and for a
training run (``TrainingCheckpoint``, one per ``tinker://`` path).

Nothing here checks a lease or an owner: the caller has fenced the worker (api.jobs.leases, api.training_api.leases) or
checked that the project owns the job or run (api.jobs.access, api.training_api.service), and passes it down.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.core.errors import NotFound
from api.core.pagination import Page, anchor, keyset_page
from api.db.models import Checkpoint, Job, TrainingCheckpoint, new_id, now
from runtime.storage import ObjectStore
from runtime.training_api import CheckpointTarget


# A job's checkpoints
@dataclass(frozen=True)
class CheckpointList:
    job: Job  # the names users load a checkpoint by are built from the job's model and suffix
    page: Page[Checkpoint]
    best_id: str | None


def register_job_checkpoint(
    session: Session,
    job_id: str,
    step: int,
    object_key: str,
    state_key: str | None,
    metrics: dict[str, Any],
) -> tuple[Checkpoint, bool]:
    """The job's checkpoint at ``step``, and whether this call added it (the caller commits). A retried registration,
    or a resumed attempt re-reaching a step: resume is exact (same data, RNG and optimizer state), so the first
    registration stands and the step is not counted twice."""
    existing = session.scalar(select(Checkpoint).where(Checkpoint.job_id == job_id, Checkpoint.step_number == step))
    if existing is not None:
        return existing, False
    ckpt = Checkpoint(
        id=new_id("ftckpt"),
        job_id=job_id,
        step_number=step,
        object_key=object_key,
        state_key=state_key,
        metrics=metrics,
    )
    session.add(ckpt)
    return ckpt, True


def checkpoint_name(job: Job, step: int) -> str:
    """The public name of one checkpoint (the ``fine_tuned_model_checkpoint`` field of the checkpoints list)."""
    return f"ft:{job.model}:{job.suffix or 'rft'}:{job.id}:ckpt-step-{step}"


def list_job_checkpoints(session: Session, job: Job, *, limit: int, after: str | None) -> CheckpointList:
    """Newest step first, with the best one marked; ``after`` is the id of the last checkpoint of the previous page."""
    start = anchor(
        after, Checkpoint.id == after, Checkpoint.job_id == job.id, missing=f"no checkpoint {after!r} in job {job.id}"
    )
    query = select(Checkpoint).where(Checkpoint.job_id == job.id)
    keys = [Checkpoint.step_number]
    page = keyset_page(session, query, keys, limit=limit, descending=True, after=start)
    return CheckpointList(job, page, best_checkpoint_id(session, job.id))


def best_checkpoint_id(session: Session, job_id: str) -> str | None:
    """The checkpoint with the highest validation reward (the earliest on a tie); None without validation."""
    best: tuple[float, int, str] | None = None
    for cid, step, metrics in session.execute(
        select(Checkpoint.id, Checkpoint.step_number, Checkpoint.metrics).where(Checkpoint.job_id == job_id)
    ):
        value = (metrics or {}).get("valid_reward_mean")
        if isinstance(value, int | float) and (best is None or (value, -step) > (best[0], -best[1])):
            best = (float(value), step, cid)
    return best[2] if best else None


def job_checkpoint(session: Session, job_id: str, ckpt_id: str) -> Checkpoint:
    """The job's checkpoint ``ckpt_id``, or 404."""
    ckpt = session.scalar(select(Checkpoint).where(Checkpoint.id == ckpt_id, Checkpoint.job_id == job_id))
    if ckpt is None:
        raise NotFound(f"no checkpoint {ckpt_id!r} in job {job_id}", param="checkpoint_id")
    return ckpt


# A training run's checkpoints
def register_run_checkpoint(
    db: Session,
    project_id: str,
    run_id: str,
    kind: str,
    name: str,
    target: CheckpointTarget,
    size_bytes: int | None,
) -> TrainingCheckpoint:
    """A save that succeeded: its checkpoint row (the object is in the store now), replacing an overwritten one (the
    caller commits). By path: two saves to one name, both queued before either landed, leave one checkpoint (the
    later one's)."""
    row = db.scalars(select(TrainingCheckpoint).where(TrainingCheckpoint.tinker_path == target.tinker_path)).first()
    if row is None:
        row = TrainingCheckpoint(
            id=target.checkpoint_id,
            project_id=project_id,
            run_id=run_id,
            kind=kind,
            name=name,
            tinker_path=target.tinker_path,
            object_key=target.object_key,
        )
        db.add(row)
    row.size_bytes = size_bytes
    row.created_at = now()
    return row


def at_path(db: Session, tinker_path: str) -> TrainingCheckpoint | None:
    """The checkpoint a ``tinker://`` path names, whoever's it is (the caller checks the project)."""
    return db.scalars(select(TrainingCheckpoint).where(TrainingCheckpoint.tinker_path == tinker_path)).first()


def run_checkpoint(db: Session, run_id: str, checkpoint_id: str) -> TrainingCheckpoint:
    """The run's checkpoint ``checkpoint_id`` (its ``ftckpt-`` id), or 404."""
    row = db.get(TrainingCheckpoint, checkpoint_id)
    if row is None or row.run_id != run_id:
        raise NotFound(f"no checkpoint {checkpoint_id!r} in training run {run_id}", param="training_checkpoint_id")
    return row


def of_runs(db: Session, run_ids: list[str]) -> dict[str, list[TrainingCheckpoint]]:
    """Each run's checkpoints, oldest first, in one query."""
    out: dict[str, list[TrainingCheckpoint]] = defaultdict(list)
    query = select(TrainingCheckpoint).where(TrainingCheckpoint.run_id.in_(run_ids))
    for row in db.scalars(query.order_by(TrainingCheckpoint.created_at)):
        out[row.run_id].append(row)
    return out


def last_of_run(db: Session, run_id: str, kind: str) -> TrainingCheckpoint | None:
    """The run's newest checkpoint of ``kind`` (training or sampler)."""
    return db.scalars(
        select(TrainingCheckpoint)
        .where(TrainingCheckpoint.run_id == run_id, TrainingCheckpoint.kind == kind)
        .order_by(TrainingCheckpoint.created_at.desc())
        .limit(1)
    ).first()


def project_run_checkpoints(
    db: Session, project_id: str, run_id: str | None, limit: int, offset: int
) -> tuple[list[TrainingCheckpoint], int]:
    """A page of the project's checkpoints (of one run, when given), oldest first, and how many there are in all."""
    where = TrainingCheckpoint.project_id == project_id
    if run_id is not None:
        where = where & (TrainingCheckpoint.run_id == run_id)
    total = db.scalar(select(func.count()).select_from(TrainingCheckpoint).where(where)) or 0
    rows = db.scalars(
        select(TrainingCheckpoint)
        .where(where)
        .order_by(TrainingCheckpoint.created_at, TrainingCheckpoint.id)
        .offset(offset)
        .limit(limit)
    ).all()
    return list(rows), total


def delete_run_checkpoint(db: Session, store: ObjectStore, row: TrainingCheckpoint) -> None:
    """Its object, then its row."""
    store.delete(row.object_key)
    db.delete(row)
    db.commit()
