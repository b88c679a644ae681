"""Job rules and state transitions (no FastAPI).

Every status change is one guarded ``UPDATE … WHERE id = :id AND status IN (…)`` (plus, for workers, the lease
epoch), so a user's cancel and a worker's write cannot race into an impossible state, and a worker holding a
stale lease (a second delivery of the same task, a worker that was presumed dead) can never write.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from api.core.errors import Conflict, InvalidRequest, TooManyRequests, Unprocessable
from api.core.pagination import Page, anchor, keyset_page
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.locks import hold_project_lock
from api.db.models import UNFINISHED, File, Job, JobStatus, Project, ResumeReason, new_id, now
from api.db.session import rows_changed
from api.files.service import get_file, head_rows
from api.graders.environments import check_environment
from api.graders.judges import check_own_judges
from api.graders.service import dry_run
from api.jobs import budget
from api.jobs.access import get_job
from api.jobs.events import add_event
from api.jobs.openai_compat import ignored_field_warnings, metadata_filters
from api.jobs.prompt_limits import check_prompt_lengths
from api.jobs.schemas import JobCreate
from api.models import service as model_registry
from api.secrets import service as project_secrets
from api.usage import budgets
from api.webhooks.service import record_job_event
from grpo_core.schemas.config import DEFAULT_LEARNING_RATE, GRPOConfig, PreflightConfig, apply_caps
from grpo_core.schemas.graders import reward_columns
from grpo_core.schemas.presets import learning_rate_note
from runtime.internal import Resources
from runtime.storage import ObjectStore

log = logging.getLogger(__name__)
HP = "method.reinforcement.hyperparameters"
GRADER = "method.reinforcement.grader"


def create_job(
    session: Session,
    store: ObjectStore,
    queue: Doorbell,
    settings: ApiSettings,
    *,
    project_id: str,
    body: JobCreate,
    preflight_only: bool = False,
) -> Job:
    """Validate everything a worker would trip over (the model, the files, the hyperparameters under this service's
    caps, the grader on the first training rows), store the job ``queued``, then ring the queue (after commit)."""
    check_quota(session, settings, project_id)  # early, unlocked: a project at its quota is refused before the work
    budgets.check_project(session, settings, project_id, "new jobs")  # 402 over its monthly budget
    plan = plan_job(session, store, settings, project_id, body, preflight_only)
    # Again, under the project's lock (held until the commit below): another API process or thread creating a job
    # for this project now waits here, then counts this one. Taken last so the validation above runs unlocked.
    hold_project_lock(session, "job-quota", project_id)
    check_quota(session, settings, project_id)
    job = _store(session, settings, project_id, body, plan)
    _ring(session, queue, job)
    return job


@dataclass(frozen=True)
class JobPlan:
    """What validation of a job's body resolved: its training file, its config (caps applied, preflight set), the
    messages about what the caps changed, and its method as the job row stores it."""

    train: File
    cfg: GRPOConfig
    capped: list[str]
    method: dict[str, Any]


def plan_job(
    session: Session,
    store: ObjectStore,
    settings: ApiSettings,
    project_id: str,
    body: JobCreate,
    preflight_only: bool = False,
) -> JobPlan:
    """Every check of a job's body, unlocked, before anything is stored (a 4xx naming the field otherwise), and
    what it resolved: what a job is created from, and what its estimate is made of (api.billing.estimate)."""
    model = model_registry.find(session, settings, body.model)
    if model is None:
        known = ", ".join(model_registry.available(session, settings)) or "none installed"
        raise InvalidRequest(
            f"unknown model {body.model!r} (available: {known})", param="model", code="model_not_found"
        )
    check_resources(body.resources, settings)
    check_priority(session, project_id, body.priority)
    named = {f"integrations[{i}].api_key_secret": s.api_key_secret for i, s in enumerate(body.integrations or [])}
    project_secrets.require_named(session, project_id, named)  # the secrets the integrations name exist
    grader = body.method.reinforcement.grader
    check_own_judges(session, settings, project_id, grader, GRADER, processes=body.resources.world_size)
    # FOR SHARE (PostgreSQL): a concurrent DELETE /v1/files/{id} waits for this job, then sees it and refuses.
    train = get_file(session, project_id, body.training_file, param="training_file", for_share=True)
    files = {"training_file": train}
    if body.validation_file is not None:
        files["validation_file"] = get_file(
            session, project_id, body.validation_file, param="validation_file", for_share=True
        )
    for param, f in files.items():
        if f.purpose != "fine-tune":
            raise InvalidRequest(f"{f.id} was uploaded for {f.purpose!r}, not 'fine-tune'", param=param)
    try:
        cfg, capped = apply_caps(body.method.reinforcement.hyperparameters, settings.caps)
    except ValidationError as exc:
        raise Unprocessable(f"hyperparameters are invalid under this service's limits: {exc}", param=HP) from None
    check_batch_split(cfg.batch_size, body.resources, settings)
    check_overlap(cfg.max_staleness, body.resources)
    if body.preflight or preflight_only or cfg.preflight is not None:
        pre = (cfg.preflight or PreflightConfig()).model_copy(update={"only": preflight_only} if preflight_only else {})
        cfg = cfg.model_copy(update={"preflight": pre})
    resolved = body.method.reinforcement.model_copy(update={"hyperparameters": cfg})
    method = body.method.model_copy(update={"reinforcement": resolved}).model_dump(mode="json")  # Job.reinforcement
    columns = reward_columns(body.method.reinforcement.grader)
    if cfg.reward_weights is not None and len(cfg.reward_weights) != len(columns):
        raise Unprocessable(
            f"reward_weights has {len(cfg.reward_weights)} weights for {len(columns)} reward columns {columns}",
            param=f"{HP}.reward_weights",
        )
    # the grader on a few real rows, before any GPU time
    head = head_rows(store, train.object_key, 3)
    dry_run(body.method.reinforcement.grader, head, settings.grader_env(), GRADER)
    if body.method.reinforcement.environment is not None:
        check_environment(body.method.reinforcement.environment, head, settings.grader_env())
    if cfg.batch_size > train.row_count:
        raise Unprocessable(
            f"batch_size={cfg.batch_size} is larger than the training file ({train.row_count} rows)",
            param=f"{HP}.batch_size",
        )
    check_prompt_lengths(store, settings, model, files, cfg)
    return JobPlan(train, cfg, capped, method)


def _store(session: Session, settings: ApiSettings, project_id: str, body: JobCreate, plan: JobPlan) -> Job:
    """The job row, ``queued``, and its first events, committed."""
    cfg, train = plan.cfg, plan.train
    job = Job(
        id=new_id("ftjob"),
        project_id=project_id,
        model=body.model,
        training_file=train.id,
        validation_file=body.validation_file,
        seed=body.seed if body.seed is not None else secrets.randbelow(2**31),
        suffix=body.suffix,
        metadata_=body.metadata,
        method=plan.method,
        resources=body.resources.model_dump(mode="json"),
        integrations=[i.model_dump(mode="json") for i in body.integrations] if body.integrations else None,
        status=JobStatus.queued,
        queued_at=now(),
        priority=body.priority,
        preemptible=body.preemptible,
        budget=(body.budget.model_dump(exclude_none=True) or None) if body.budget is not None else None,
        total_steps=0 if cfg.preflight is not None and cfg.preflight.only else cfg.total_steps(train.row_count),
        max_attempts=settings.max_attempts,
    )
    session.add(job)
    session.flush()
    add_event(session, job.id, f"Created fine-tuning job: {job.id}")
    add_event(session, job.id, f"Validated training file: {train.row_count} rows; {job.total_steps} steps planned")
    for message in plan.capped + ignored_field_warnings(cfg):
        add_event(session, job.id, message, level="warn")
    given = "learning_rate" in body.method.reinforcement.hyperparameters.model_fields_set
    lr_note = learning_rate_note(cfg.recipe, cfg.learning_rate, given, DEFAULT_LEARNING_RATE)
    if lr_note is not None:
        add_event(session, job.id, lr_note)
    session.commit()
    return job


def _ring(session: Session, queue: Doorbell, job: Job) -> None:
    """Queue after commit: a worker can never receive an id whose row it cannot see yet. If the broker is down the
    job stays queued (and says so); the reaper rings again (api.reaper)."""
    try:
        queue.ring(job.id)
        job.enqueued_at = now()
        add_event(session, job.id, "Job queued")
    except Exception as exc:  # broker down: never lose the job, never fail the request
        log.exception("enqueue failed for %s", job.id)
        add_event(
            session,
            job.id,
            f"Could not reach the job queue ({type(exc).__name__}); the job stays queued",
            level="warn",
        )
    session.commit()


def check_quota(session: Session, settings: ApiSettings, project_id: str) -> None:
    """429 ``quota_exceeded`` when the project already has ``max_active_jobs_per_project`` unfinished jobs. Exact
    only under ``hold_project_lock(session, "job-quota", project_id)`` (api.db.locks): without it two creations
    may both count one below the quota."""
    active = (
        session.scalar(
            select(func.count()).select_from(Job).where(Job.project_id == project_id, Job.status.in_(list(UNFINISHED)))
        )
        or 0
    )
    max_active_jobs = settings.max_active_jobs_per_project
    if active >= max_active_jobs:
        raise TooManyRequests(
            f"this project already has {active} unfinished jobs; the quota is {max_active_jobs} "
            "(max_active_jobs_per_project): wait for one to finish or cancel one",
            param="quota",
            code="quota_exceeded",
            headers={"Retry-After": "60"},
        )


def check_priority(session: Session, project_id: str, priority: int) -> None:
    """422 for a priority above the project's allowance (``max_priority``, which an admin sets: ``python -m
    api.admin projects set PROJECT --max-priority N``); any priority at or below it, negative ones included, is
    the project's own choice."""
    allowed = session.scalar(select(Project.max_priority).where(Project.id == project_id)) or 0
    if priority > allowed:
        raise Unprocessable(
            f"priority={priority} is above this project's allowance of {allowed}: an admin raises it "
            "(python -m api.admin projects set PROJECT --max-priority N), or ask for less",
            param="priority",
        )


def check_resources(resources: Resources, settings: ApiSettings) -> None:
    """422 for more devices per node or more nodes than this deployment's workers offer: such a job could never
    be scheduled, so it is refused now rather than left waiting in the queue."""
    limits = (
        ("devices", resources.devices, settings.max_devices_per_node, "MAX_DEVICES_PER_NODE", "device", "per node"),
        ("nodes", resources.nodes, settings.max_nodes, "MAX_NODES", "node", "per job"),
    )
    for field, asked, most, env, noun, per in limits:
        if asked > most:
            raise Unprocessable(
                f"resources.{field}={asked}: this service's workers offer at most {most} {noun}{'s' * (most > 1)} "
                f"{per} ({env}); ask for fewer",
                param=f"resources.{field}",
            )


def check_overlap(max_staleness: int, resources: Resources) -> None:
    """422 for what asynchronous GRPO cannot do: a sampler on devices of its own without max_staleness, or one
    that takes every device, or spans nodes, or more than one device; and max_staleness on several training ranks,
    since its sampler runs beside one training process (grpo_core.rollout.pipeline)."""
    rollout, devices, nodes = resources.rollout_devices, resources.devices, resources.nodes
    field = "resources.rollout_devices"
    if rollout and not max_staleness:
        raise Unprocessable(
            f"{field}={rollout} samples on devices of its own while the others train, which needs "
            f"{HP}.max_staleness of at least 1: set max_staleness 1, or rollout_devices 0",
            param=field,
        )
    if rollout > 1:
        raise Unprocessable(
            f"{field}={rollout}: the sampler is one engine on one device here; set rollout_devices 1",
            param=field,
        )
    if rollout and devices != rollout + 1:
        raise Unprocessable(
            f"{field}={rollout} with resources.devices={devices} leaves {max(devices - rollout, 0)} devices to "
            f"train, and max_staleness samples beside one training process: set resources.devices {rollout + 1}",
            param=field,
        )
    if rollout and nodes > 1:
        raise Unprocessable(
            f"{field}={rollout} splits one node's devices, and this job asks for resources.nodes={nodes}: "
            "train on one node",
            param=field,
        )
    if max_staleness and resources.world_size > 1:
        raise Unprocessable(
            f"max_staleness={max_staleness} samples beside one training process, and this job asks for "
            f"{resources.world_size} (resources.devices={devices} × resources.nodes={nodes}): set max_staleness "
            "0, train on one device, or give the sampler the other (resources.devices 2 with "
            "resources.rollout_devices 1)",
            param=f"{HP}.max_staleness",
        )


def check_batch_split(batch_size: int, resources: Resources, settings: ApiSettings) -> None:
    """422 when a step's prompts (after this service's caps and the recipe) cannot give every rank at least one."""
    world = resources.world_size
    if batch_size >= world:
        return
    capped = settings.cap_batch_size is not None and batch_size == settings.cap_batch_size
    why = f" (this service caps it at {batch_size}: CAP_BATCH_SIZE)" if capped else ""
    raise Unprocessable(
        f"batch_size={batch_size}{why} is smaller than the job's {world} ranks (resources.devices="
        f"{resources.devices} × resources.nodes={resources.nodes}): every rank needs at least one prompt per step; "
        "raise batch_size or ask for fewer devices or nodes",
        param=f"{HP}.batch_size",
    )


def list_jobs(
    session: Session, project_id: str, *, limit: int, after: str | None, query: Iterable[tuple[str, str]] = ()
) -> Page[Job]:
    """Newest first; ``query`` (the request's raw pairs) may hold OpenAI's metadata filter (openai_compat)."""
    q = select(Job).where(Job.project_id == project_id, *metadata_filters(query, session.get_bind().dialect.name))
    start = anchor(
        after, Job.id == after, Job.project_id == project_id, missing=f"no fine-tuning job {after!r} to page after"
    )
    keys = [Job.created_at, Job.id]
    return keyset_page(session, q, keys, limit=limit, descending=True, after=start)


def set_status(session: Session, job_id: str, allowed: Iterable[str], **values: Any) -> bool:
    """The one way a job's status changes: a guarded UPDATE that applies only while the job is in ``allowed`` (so a
    racing cancel, claim or finish makes it match no row); True when it applied."""
    return (
        rows_changed(session, update(Job).where(Job.id == job_id, Job.status.in_(list(allowed))).values(**values)) == 1
    )


def cancel_job(session: Session, project_id: str, job_id: str) -> Job:
    """Idempotent. queued or paused -> cancelled at once; running or pausing -> cancelling (the worker
    checkpoints and stops at the next step boundary; the reaper finishes it if the worker is gone)."""
    job = get_job(session, project_id, job_id)
    if set_status(session, job_id, [JobStatus.queued, JobStatus.paused], status=JobStatus.cancelled, finished_at=now()):
        add_event(
            session,
            job_id,
            "Job cancelled before it ran again" if job.started_at else "Job cancelled before it started",
        )
        record_job_event(session, job, "fine_tuning.job.cancelled")
    elif set_status(session, job_id, [JobStatus.running, JobStatus.pausing], status=JobStatus.cancelling):
        add_event(session, job_id, "Cancellation requested; the job stops after the current step")
    else:
        _unless_already(session, job, (JobStatus.cancelling, JobStatus.cancelled), "job_not_cancellable")
    session.commit()
    session.refresh(job)
    return job


def pause_job(session: Session, project_id: str, job_id: str) -> Job:
    """Idempotent (OpenAI's pause). queued -> paused at once; running -> pausing: the worker checkpoints at the
    next step boundary, frees itself and the job becomes paused, holding that checkpoint."""
    job = get_job(session, project_id, job_id)
    if set_status(session, job_id, [JobStatus.queued], status=JobStatus.paused):
        add_event(session, job_id, "Job paused before it ran")
    elif set_status(session, job_id, [JobStatus.running], status=JobStatus.pausing):
        add_event(session, job_id, "Pause requested; the job checkpoints and stops after the current step")
    else:
        _unless_already(session, job, (JobStatus.pausing, JobStatus.paused), "job_not_pausable")
    session.commit()
    session.refresh(job)
    return job


_REFUSALS = {
    "job_not_cancellable": "job {id} has already {status}; only an unfinished job can be cancelled",
    "job_not_pausable": "job {id} is {status}; only a queued or running job can be paused",
    "job_not_paused": "job {id} is {status}; only a paused job can be resumed",
}


def _unless_already(session: Session, job: Job, done: tuple[str, ...], code: str) -> None:
    """A request neither transition took: fine when the job is already where it leads (the request is
    idempotent), else 409 ``code``, read after a refresh (the state that made both guards miss)."""
    session.refresh(job)
    if job.status not in done:
        message = _REFUSALS[code].format(id=job.id, status=job.status)
        raise Conflict(message, param="fine_tuning_job_id", code=code)


def resume_job(session: Session, queue: Doorbell, settings: ApiSettings, project_id: str, job_id: str) -> Job:
    """paused -> queued with a fresh attempt budget; the claim resumes from the checkpoint taken at the pause.
    402 while a budget is spent (the project's monthly one, the job's own: api.jobs.budget.check_resume)."""
    job = get_job(session, project_id, job_id)
    if job.status == JobStatus.paused:
        budget.check_resume(session, settings, job)
    values = {
        "status": JobStatus.queued,
        "attempts": 0,
        "not_before": None,
        "enqueued_at": now(),
        "queued_at": now(),
        # for the next claim's event; a job paused before it ever ran just starts
        "resume_reason": ResumeReason.paused if job.started_at else None,
    }
    if not set_status(session, job_id, [JobStatus.paused], **values):
        _unless_already(session, job, (), "job_not_paused")
    add_event(session, job_id, f"Resume requested; the job continues from step {job.steps_done}")
    session.commit()
    try:
        queue.ring(job_id)
    except Exception:  # the reaper rings again after requeue_after_seconds
        log.exception("enqueue failed for %s", job_id)
    session.refresh(job)
    return job
