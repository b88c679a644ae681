"""A claimed job read once: its config, grader and model checked, its inputs fetched, its graders built.

``read_job`` validates the claim's hyperparameters, grader and environment once per node: the worker that claimed
the job (worker.runner) and each worker that joins a multi-node job as another node (worker.node). From there the
``Job`` travels typed: to the trainer in this process, and to every rank of the node in its ``spec.json``
(worker.launch.RankSpec, read by worker.rank). What the worker changes (the readiness probe pins ``max_steps``:
worker.preflight) is a typed copy, never an edit of the claim's dict. Each node fetches its own copy of the inputs
from the object store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from grpo_core.errors import UserError
from grpo_core.models.catalog import resolve_model
from grpo_core.rewards.base import Grader
from grpo_core.rewards.judge import JudgeNotConfigured
from grpo_core.rewards.python_runner import SandboxUnavailable
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.graders import GraderSpec, uses_python
from runtime import internal as api
from runtime.storage import ObjectStore
from worker.checkpoints import unpack
from worker.sandbox_check import python_graders_allowed

if TYPE_CHECKING:
    from worker.model_cache import ModelCache
from worker.settings import WorkerSettings


class Job(BaseModel):
    """A claimed job as this node runs it, validated once (``read_job``)."""

    model_config = ConfigDict(frozen=True)

    cfg: GRPOConfig
    grader: GraderSpec
    model_dir: Path  # this node's folder of the base model
    base_name: str | None = None  # what the adapter names as its base: a registered model's hub id or id
    environment: EnvironmentSpec | None = None  # tools or respond(): every sample a multi-turn episode


class Inputs(BaseModel):
    """Where a node's copy of the job's inputs lies."""

    train: Path
    validation: Path | None = None
    resume: Path | None = None  # an unpacked checkpoint folder


def read_job(
    claim: api.ClaimResponse,
    settings: WorkerSettings,
    store: ObjectStore | None = None,
    say: Callable[[str], None] | None = None,
) -> Job:
    """The claim's spec, validated by this worker (a spec it cannot run fails the job with the reason), and its
    base model's folder: a registered model fetched into this node's cache (worker.model_cache), or the catalog's
    folder."""
    try:
        cfg = GRPOConfig.model_validate(claim.hyperparameters)
        grader: GraderSpec = TypeAdapter(GraderSpec).validate_python(claim.grader)
        environment = EnvironmentSpec.model_validate(claim.environment) if claim.environment else None
    except ValidationError as exc:
        raise UserError(f"job spec is invalid: {exc}") from None
    source = claim.model_source
    model_dir = base_model_dir(settings, store, claim.model, source, say)
    return Job(cfg=cfg, grader=grader, model_dir=model_dir, base_name=adapter_base(source), environment=environment)


def adapter_base(source: api.ModelSource | None) -> str | None:
    """What an adapter trained on a base model names as its base (PEFT's ``base_model_name_or_path``): a
    registered model's hub id or id; None for a catalog model (grpo_core.policy names it)."""
    return (source.hub_id or source.id) if source is not None else None


def base_model_dir(
    settings: WorkerSettings,
    store: ObjectStore | None,
    model_id: str,
    source: api.ModelSource | None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The folder of base model ``model_id``, for a job, an eval run or a training session: a registered model's
    files fetched into this node's cache (``source``: worker.model_cache), else the worker's catalog folder; a
    UserError when this worker has neither."""
    if source is not None:
        from runtime.storage import make_store

        return model_cache(settings).fetch(store or make_store(settings), source, say)
    try:
        return resolve_model(settings.models_dir, model_id)
    except KeyError as exc:
        raise UserError(f"this worker cannot run it: {exc.args[0]}") from None


def model_cache(settings: WorkerSettings) -> ModelCache:
    """This process's view of the node's model cache: what it fetched stays in use until ``release_all`` (the
    end of the job or eval run) or the process's exit."""
    from worker.model_cache import node_cache

    return node_cache(settings.model_cache_path, int(settings.model_cache_max_gb * 1e9))


def fetch_inputs(store: ObjectStore, claim: api.ClaimResponse, dest: Path) -> Inputs:
    """Download the training (and validation) file and unpack the checkpoint to resume from into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    train = dest / "train.jsonl"
    store.get_file(claim.training_file_key, train)
    validation = None
    if claim.validation_file_key:
        validation = dest / "validation.jsonl"
        store.get_file(claim.validation_file_key, validation)
    resume = None
    if claim.resume is not None:  # its manifest is checked when it is loaded
        resume = unpack(store, claim.resume.state_key, dest / "resume")
    return Inputs(train=train, validation=validation, resume=resume)


def check_sandbox(job: Job, settings: WorkerSettings, say: Callable[[str], None]) -> None:
    """A python grader or an environment needs this worker's sandbox: refuse the job with the reason, or say which
    tier runs it."""
    if uses_python(job.grader) or job.environment is not None:
        allowed, why = python_graders_allowed(settings.reward_sandbox)
        if not allowed:
            raise UserError(why)
        say(why)


def make_graders(job: Job, settings: WorkerSettings, claim: api.ClaimResponse) -> list[Grader]:
    """The job's graders on this worker: a score_model grader's own judge gets its key from the claim's secrets
    (which only the claiming node's rank 0 holds: a job that names one runs on one process, api.graders.judges)."""
    from grpo_core.rewards.graders import build_graders

    try:
        return build_graders(job.grader, settings.grader_env(claim.secrets))
    except (SandboxUnavailable, JudgeNotConfigured) as exc:
        raise UserError(f"this service cannot run the grader: {exc}") from None
