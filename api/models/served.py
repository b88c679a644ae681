"""Which model a ``model`` name means, for the caller's project: a base model of the catalog, a job's fine-tuned
model (its newest checkpoint), one checkpoint (``ft:…:ckpt-step-N`` or its ``ftckpt-…`` id), or a sampler checkpoint
of the training API (its ``ftckpt-…`` id or ``tinker://…/sampler_weights/…`` path).

Ownership is checked here, once, for every route that takes a model name (inference, eval runs, ``/v1/models``):
another project's model is "not found", never "forbidden" (its existence is not revealed), as for jobs
(api.jobs.access). No FastAPI, no HTTP here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.checkpoints.service import checkpoint_name
from api.core.errors import NotFound
from api.db.models import Checkpoint, Job, JobStatus, TrainingCheckpoint, TrainingRun
from api.models.schemas import Serving

# ft:{base}:{suffix}:{job id}[:ckpt-step-N]; the base and the suffix may hold ':' themselves, the job id cannot.
_FT_NAME = re.compile(r"^ft:.+:(?P<job>ftjob-[0-9a-f]+)(?::ckpt-step-(?P<step>\d{1,9}))?$")


@dataclass(frozen=True)
class Target:
    """What an inference request runs on.

    ``adapter`` is the name the inference server knows the LoRA adapter by (the checkpoint id: one name per set
    of weights, so a job's final model and its last ``ckpt-step-N`` share one loaded adapter); None for a base
    model. ``requested`` is echoed back as the response's ``model``.
    """

    requested: str
    base: str
    adapter: str | None = None
    object_key: str | None = None  # the adapter tar in the object store


class Fleet(Protocol):
    """What ``/v1/models`` asks the inference fleet (api.inference.router.Router, which imports this module)."""

    async def refresh(self, *, force: bool = False) -> None: ...

    def serving(self, base: str) -> Serving: ...


def not_found(model: str) -> NotFound:
    return NotFound(
        f"the model {model!r} does not exist or you do not have access to it", param="model", code="model_not_found"
    )


def resolve(session: Session, project_id: str, model: str, base_models: list[str]) -> Target:
    """The target of ``model`` for ``project_id``, or 404 ``model_not_found``."""
    if model in base_models:
        return Target(requested=model, base=model)
    if model.startswith("tinker://"):
        return _sampler_checkpoint(session, project_id, model, TrainingCheckpoint.tinker_path == model)
    if model.startswith("ftckpt-"):
        row = session.execute(
            select(Checkpoint, Job)
            .join(Job, Job.id == Checkpoint.job_id)
            .where(Checkpoint.id == model, Job.project_id == project_id)
        ).first()
        if row is None:
            return _sampler_checkpoint(session, project_id, model, TrainingCheckpoint.id == model)
        found, owner = row
        return Target(requested=model, base=owner.model, adapter=found.id, object_key=found.object_key)
    match = _FT_NAME.match(model)
    if match is None:
        raise not_found(model)
    job: Job | None = session.scalar(select(Job).where(Job.id == match["job"], Job.project_id == project_id))
    if job is None:
        raise not_found(model)
    query = select(Checkpoint).where(Checkpoint.job_id == job.id)
    ckpt: Checkpoint | None
    if match["step"] is not None:
        ckpt = session.scalar(query.where(Checkpoint.step_number == int(match["step"])))
        if ckpt is None or checkpoint_name(job, ckpt.step_number) != model:
            raise not_found(model)
    else:
        # the job's model exists once the job succeeded: before that, its checkpoints are there by their own names
        if job.status != JobStatus.succeeded or job.fine_tuned_model != model:
            raise not_found(model)
        ckpt = session.scalar(query.order_by(Checkpoint.step_number.desc()).limit(1))
        if ckpt is None:
            raise not_found(model)
    return Target(requested=model, base=job.model, adapter=ckpt.id, object_key=ckpt.object_key)


def _sampler_checkpoint(session: Session, project_id: str, model: str, which: Any) -> Target:
    """A sampler checkpoint a training-API client saved (api.training_api), by its ``ftckpt-`` id or ``tinker://``
    path."""
    row = session.execute(
        select(TrainingCheckpoint, TrainingRun)
        .join(TrainingRun, TrainingRun.id == TrainingCheckpoint.run_id)
        .where(which, TrainingCheckpoint.project_id == project_id, TrainingCheckpoint.kind == "sampler")
    ).first()
    if row is None:
        raise not_found(model)
    found, run = row
    return Target(requested=model, base=run.base_model, adapter=found.id, object_key=found.object_key)


def fine_tuned_models(session: Session, project_id: str) -> list[tuple[str, str, int]]:
    """The project's fine-tuned models as (name, base model, created_at), newest first (for ``/v1/models``)."""
    rows = session.execute(
        select(Job.fine_tuned_model, Job.model, Job.finished_at, Job.created_at)
        .where(Job.project_id == project_id, Job.status == JobStatus.succeeded, Job.fine_tuned_model.is_not(None))
        .order_by(Job.created_at.desc(), Job.id.desc())
    )
    return [(str(name), str(base), int(finished or created)) for name, base, finished, created in rows]
