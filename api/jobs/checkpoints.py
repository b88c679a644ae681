"""A job's checkpoints as its owner sees them: listed newest first with the best one marked (no FastAPI here)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.core.pagination import Page, anchor, keyset_page
from api.db.models import Checkpoint, Job
from api.jobs.access import get_job


@dataclass(frozen=True)
class CheckpointList:
    job: Job  # the names users load a checkpoint by are built from the job's model and suffix
    page: Page[Checkpoint]
    best_id: str | None


def list_checkpoints(
    session: Session, project_id: str, job_id: str, *, limit: int, after: str | None
) -> CheckpointList:
    """Newest step first; ``after`` is the id of the last checkpoint of the previous page."""
    job = get_job(session, project_id, job_id)
    start = anchor(
        after, Checkpoint.id == after, Checkpoint.job_id == job_id, missing=f"no checkpoint {after!r} in job {job_id}"
    )
    query = select(Checkpoint).where(Checkpoint.job_id == job_id)
    keys = [Checkpoint.step_number]
    page = keyset_page(session, query, keys, limit=limit, descending=True, after=start)
    return CheckpointList(job, page, best_checkpoint_id(session, job_id))


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
