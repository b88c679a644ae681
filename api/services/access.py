"""A project's own jobs and checkpoints, or 404: every read of a job by a user goes through here, so another
tenant's object is "not found" (never "forbidden": its existence is not revealed)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import Checkpoint, Job
from api.errors import NotFound


def get_job(session: Session, project_id: str, job_id: str) -> Job:
    job = session.scalar(select(Job).where(Job.id == job_id, Job.project_id == project_id))
    if job is None:
        raise NotFound(f"no fine-tuning job with id {job_id!r}", param="fine_tuning_job_id")
    return job


def get_checkpoint(session: Session, project_id: str, job_id: str, ckpt_id: str) -> Checkpoint:
    get_job(session, project_id, job_id)
    ckpt = session.scalar(select(Checkpoint).where(Checkpoint.id == ckpt_id, Checkpoint.job_id == job_id))
    if ckpt is None:
        raise NotFound(f"no checkpoint {ckpt_id!r} in job {job_id}", param="checkpoint_id")
    return ckpt
