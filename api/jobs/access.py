"""A project's own jobs and checkpoints, or 404: every read of a job by a user goes through here, so another
tenant's object is "not found" (never "forbidden": its existence is not revealed)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.checkpoints.service import job_checkpoint
from api.core.errors import NotFound
from api.core.pagination import Anchor
from api.db.models import Checkpoint, Job


def owned_job(project_id: str, job_id: str) -> Anchor:
    """The project's job ``job_id`` as what a page of its events or metrics belongs to (pagination.keyset_page)."""
    where = (Job.id == job_id, Job.project_id == project_id)
    return Anchor(where, f"no fine-tuning job with id {job_id!r}", param="fine_tuning_job_id")


def get_job(session: Session, project_id: str, job_id: str) -> Job:
    job = session.scalar(select(Job).where(Job.id == job_id, Job.project_id == project_id))
    if job is None:
        raise NotFound(f"no fine-tuning job with id {job_id!r}", param="fine_tuning_job_id")
    return job


def require_job(session: Session, project_id: str, job_id: str) -> None:
    """``get_job``'s 404 for a route that needs the job to exist, not its row: reads its id only (a job row carries
    its config, reports and errors as JSON, decoded on every read)."""
    job = owned_job(project_id, job_id)
    if session.scalar(select(Job.id).where(*job.where)) is None:
        raise NotFound(job.missing, param=job.param)


def get_checkpoint(session: Session, project_id: str, job_id: str, ckpt_id: str) -> Checkpoint:
    """The project's job's checkpoint (api.checkpoints.service.job_checkpoint), or 404 for either."""
    require_job(session, project_id, job_id)
    return job_checkpoint(session, job_id, ckpt_id)
