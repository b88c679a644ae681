"""Fine-tuning job shapes: OpenAI's ``fine_tuning.job`` with ``method.type = "reinforcement"``.

GRPO's hyperparameters (group_size, beta, epsilon, lora, …) sit beside OpenAI's in
``method.reinforcement.hyperparameters`` and are validated by grpo_core's own config model, so the API accepts
exactly what the worker will run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from api.checkpoints.service import checkpoint_name
from api.db.models import JobStatus
from api.usage.schemas import Cost, JobUsage
from grpo_core.evaluation.readiness import ReadinessComparison, ReadinessReport
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.graders import GraderSpec
from grpo_core.schemas.metrics import CheckpointMetrics, Execution, Level, Sample, StepMetrics
from runtime.internal import Integration, Resources

if TYPE_CHECKING:
    from api.db import models as db


NO_SAMPLES: dict[str, Any] = {"samples": []}  # a metrics event's data without its rollouts
COST = "cost"  # the key of a metrics event's data under which the API keeps the job's running cost (not the worker's)


class ReinforcementMethod(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grader: GraderSpec = Field(description="How a completion is scored (OpenAI grader JSON).")
    hyperparameters: GRPOConfig = Field(default_factory=GRPOConfig)
    environment: EnvironmentSpec | None = Field(
        None,
        description="Tools the model may call, or an environment that answers its turns: Python source run in the "
        "sandbox. Set, every sample is a multi-turn episode and the grader scores the whole episode "
        "(sample.output_text is the last assistant message; sample.messages and sample.output_tools the rest).",
    )


class Method(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["reinforcement"] = Field(description="Only reinforcement (GRPO) jobs are run by this service.")
    reinforcement: ReinforcementMethod


class JobBudget(BaseModel):
    """A job's budget: it pauses at a checkpoint when its cost reaches either cap (a warning at 80 %). Body of
    ``POST /v1/fine_tuning/jobs/{id}/budget`` too, which replaces it (both null: no budget)."""

    model_config = ConfigDict(extra="forbid")

    max_cost: float | None = Field(
        None, gt=0, description="In the project's unit (GET /v1/billing: the currency, or device-hours unpriced)."
    )
    max_device_hours: float | None = Field(None, gt=0, description="Device-hours, whatever the prices.")


class JobCreate(BaseModel):
    """Body of ``POST /v1/fine_tuning/jobs``."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=256, description="A base model id from GET /v1/models.")
    training_file: str = Field(min_length=1, description="Id of an uploaded JSONL file (purpose fine-tune).")
    validation_file: str | None = None
    seed: int | None = Field(None, ge=0, le=2**31 - 1, description="Makes sampling and LoRA init repeatable.")
    suffix: str | None = Field(None, max_length=64)
    metadata: (
        dict[Annotated[str, StringConstraints(max_length=64)], Annotated[str, StringConstraints(max_length=512)]] | None
    ) = Field(None, max_length=16, description="Up to 16 pairs (OpenAI's limits: keys ≤ 64, values ≤ 512 chars).")
    method: Method
    resources: Resources = Field(
        default_factory=Resources,
        description="What the job trains on: `devices` training processes on each of `nodes` machines (default "
        "1 and 1). Each rank takes its share of every step's prompts, so batch_size must be at least devices × "
        "nodes; the results do not depend on the split. With max_staleness >= 1, `rollout_devices` 1 of 2 devices "
        "gives the sampler a device of its own (disaggregated).",
    )
    integrations: list[Integration] | None = Field(
        None,
        max_length=5,
        description="OpenAI's integrations: `[{type: wandb, wandb: {project, name, entity, tags}}]` mirrors the "
        "config, every step's metrics and the adapter's location to Weights & Biases (offline files on the worker "
        "when it has no WANDB_API_KEY). `api_key_secret: NAME` logs with the W&B key stored as this project's secret "
        "NAME (POST /v1/secrets) instead of the worker's; `wandb` may then be left out.",
    )
    priority: int = Field(
        0,
        ge=-100,
        le=100,
        description="Higher runs first (the fleet's order is priority, then each project's fair share, then age). Up "
        "to the project's max_priority (set by an admin; 0 unless raised); below 0 always allowed.",
    )
    preemptible: bool = Field(
        True,
        description="Whether a waiting higher-priority job may preempt this one when no worker is free: it is "
        "checkpointed at its next step boundary, queued again and later resumes exactly where it stopped.",
    )
    preflight: bool = Field(
        False,
        description="Probe the base model before training and report whether GRPO can learn on this task "
        "(GET …/{id}/readiness); true uses hyperparameters.preflight, or its defaults when unset.",
    )
    budget: JobBudget | None = Field(
        None,
        description="Pause the job at a checkpoint when its cost reaches max_cost (the project's unit) or "
        "max_device_hours, with a warning at 80 % (events and webhooks); raise it (POST …/{id}/budget) and resume "
        "to continue exactly where it stopped. POST /v1/fine_tuning/jobs/estimate says what a job will cost.",
    )


class JobReadiness(BaseModel):
    """``GET /v1/fine_tuning/jobs/{id}/readiness``: will GRPO learn on this task with this model, and did it?"""

    object: Literal["fine_tuning.job.readiness"] = "fine_tuning.job.readiness"
    job_id: str
    requested: bool = Field(description="Whether the job asked for a probe (hyperparameters.preflight).")
    before: ReadinessReport | None = Field(None, description="The base model, probed before training.")
    after: ReadinessReport | None = Field(None, description="The trained adapter, on the same prompts.")
    comparison: ReadinessComparison | None = Field(None, description="Before and after, per prompt.")
    dropped_rows: list[int] = Field(
        default_factory=list, description="Training rows left out for lack of signal (drop_zero_variance_prompts)."
    )

    @classmethod
    def from_row(cls, row: db.Job) -> JobReadiness:
        state = row.readiness or {}
        requested = bool(row.reinforcement.hyperparameters.get("preflight"))
        return cls.model_validate({"job_id": row.id, "requested": requested} | state)


class JobError(BaseModel):
    code: str
    message: str
    param: str | None = None


class Waiting(BaseModel):
    """Why a queued job waits (the scheduler's answer, api.jobs.scheduling)."""

    reason: str = Field(
        description="In words: 'waiting: 3 jobs ahead', 'waiting: project at its limit of 2 running jobs', …"
    )
    position: int | None = Field(
        None, description="Jobs of every project ahead of it in the fleet's order (null: held back, not in line)."
    )


class Job(BaseModel):
    """A fine-tuning job (``fine_tuning.job``)."""

    object: Literal["fine_tuning.job"] = "fine_tuning.job"
    id: str
    model: str
    created_at: int
    finished_at: int | None
    fine_tuned_model: str | None
    organization_id: str
    # one of JobStatus, shown in the spec as an inline enum (the shape OpenAI's clients and the generated one know)
    status: Annotated[str, AfterValidator(lambda s: JobStatus(s).value)] = Field(
        json_schema_extra={"enum": [s.value for s in JobStatus]}
    )
    training_file: str
    validation_file: str | None
    result_files: list[str] = Field(default_factory=list)
    trained_tokens: int | None
    seed: int
    suffix: str | None
    metadata: dict[str, str] | None
    error: JobError | None
    hyperparameters: dict[str, Any] = Field(description="The resolved GRPO hyperparameters the job runs with.")
    method: dict[str, Any]
    estimated_finish: int | None = None
    total_steps: int = Field(description="Optimizer steps the job will take.")
    steps_done: int = Field(description="Optimizer steps finished so far.")
    execution: Execution | None = Field(
        None,
        description="Where and how the worker trains it: the device, and what the `auto` hyperparameters (device, "
        "precision, micro_batch_size, gradient_checkpointing, rollout_engine) resolved to on its hardware; null "
        "until training starts.",
    )
    resources: Resources = Field(description="Devices per node and nodes the job trains on.")
    integrations: list[Integration] | None = Field(None, description="Where the job's metrics are mirrored.")
    priority: int = Field(0, description="Its place in the fleet's order: higher runs first.")
    preemptible: bool = Field(True, description="Whether a higher-priority job may preempt it.")
    waiting: Waiting | None = Field(
        None, description="Why a queued job has not started yet (null otherwise): its place in line, or what holds it."
    )
    usage: JobUsage = Field(
        default_factory=JobUsage,
        description="What the job used so far, summed over its attempts (GET /v1/usage?job_id= has the details), "
        "and what that cost (usage.cost).",
    )
    budget: JobBudget | None = Field(None, description="Its budget (null: none).")
    budget_alert: Literal["warning", "reached"] | None = Field(
        None, description="The budget's last alert: 'warning' at 80 %, 'reached' at the cap (the job then pauses)."
    )

    @classmethod
    def from_row(cls, row: db.Job, *, waiting: Waiting | None = None, usage: JobUsage | None = None) -> Job:
        """``waiting``: the scheduler's reason for a queued job (api.jobs.scheduling.waiting), read by the route;
        ``usage``: its metered usage (api.usage.service.job_usage), read by the route for a page of jobs at once."""
        hyperparameters = row.reinforcement.hyperparameters
        renamed = {"organization_id": row.project_id, "metadata": row.metadata_, "hyperparameters": hyperparameters}
        # rows from before resources existed (null) trained on one device of one node
        extra = {"resources": row.resources or {}, "waiting": waiting, "usage": usage or JobUsage()}
        return cls.model_validate(row.columns() | renamed | extra)


class JobEvent(BaseModel):
    """A status change or message (``type: message``) or one step's metrics (``type: metrics``)."""

    object: Literal["fine_tuning.job.event"] = "fine_tuning.job.event"
    id: str
    created_at: int
    level: Level
    message: str
    type: Literal["message", "metrics"]
    data: StepMetrics | None = Field(None, description="A metrics event's step metrics; null for a message.")
    cost: Cost | None = Field(None, description="A metrics event: the job's cost when the step was recorded.")

    @classmethod
    def from_row(cls, row: db.JobEvent, *, samples: bool = True) -> JobEvent:
        """``samples=False`` leaves a metrics event's rollouts out (a light replay of a long job's curves)."""
        data = None if row.data is None else StepMetrics.model_validate(row.data if samples else row.data | NO_SAMPLES)
        return cls.model_validate(row.columns() | {"data": data, "cost": (row.data or {}).get(COST)})


class Checkpoint(BaseModel):
    """A saved LoRA adapter (``fine_tuning.job.checkpoint``); its content is a tar of the PEFT files."""

    object: Literal["fine_tuning.job.checkpoint"] = "fine_tuning.job.checkpoint"
    id: str
    created_at: int
    fine_tuned_model_checkpoint: str
    fine_tuning_job_id: str
    step_number: int
    metrics: CheckpointMetrics
    best: bool = Field(
        False, description="The job's checkpoint with the highest validation reward (needs a validation_file)."
    )

    @classmethod
    def from_row(cls, row: db.Checkpoint, job: db.Job, best_id: str | None) -> Checkpoint:
        name = checkpoint_name(job, row.step_number)
        derived = {"fine_tuning_job_id": row.job_id, "fine_tuned_model_checkpoint": name, "best": row.id == best_id}
        return cls.model_validate(row.columns() | derived | {"metrics": row.metrics or {}})


class MetricsPoint(BaseModel):
    """One step of the metric series (``GET …/metrics``): its metrics without the rollouts (``samples`` is empty;
    ``GET …/samples?step=N`` has them)."""

    object: Literal["fine_tuning.job.metrics"] = "fine_tuning.job.metrics"
    step: int
    created_at: int
    metrics: StepMetrics
    cost: Cost | None = Field(None, description="The job's cost when the step was recorded (its running cost).")
    reward_gain: float | None = Field(
        None,
        description="A validation step: its validation reward less the base model's (step 1's train reward, sampled "
        "before any update).",
    )
    reward_gain_per_cost: float | None = Field(
        None, description="reward_gain per unit of cost (cost.unit: the currency, or device-hours): what it bought."
    )

    @classmethod
    def from_row(cls, row: db.JobEvent, base_reward: float | None = None) -> MetricsPoint:
        """``base_reward``: the base model's (api.jobs.events.base_reward), for the reward gained."""
        metrics = StepMetrics.model_validate((row.data or {}) | NO_SAMPLES)
        cost = Cost.model_validate(row.data[COST]) if row.data and row.data.get(COST) else None
        valid = metrics.scores.valid_reward_mean
        gain = valid - base_reward if valid is not None and base_reward is not None else None
        per_cost = gain / cost.amount if gain is not None and cost is not None and cost.amount > 0 else None
        return cls(
            step=row.step or 0,
            created_at=row.created_at,
            metrics=metrics,
            cost=cost,
            reward_gain=gain,
            reward_gain_per_cost=per_cost,
        )


class MetricsPage(BaseModel):
    object: Literal["list"] = "list"
    data: list[MetricsPoint]
    has_more: bool


class SamplesResponse(BaseModel):
    """The rollouts logged at one step (``sample_log_count`` of them)."""

    object: Literal["fine_tuning.job.samples"] = "fine_tuning.job.samples"
    step: int
    data: list[Sample]

    @classmethod
    def from_row(cls, row: db.JobEvent) -> SamplesResponse:
        return cls(step=row.step or 0, data=[Sample.model_validate(s) for s in (row.data or {}).get("samples", [])])


class DownloadLink(BaseModel):
    object: Literal["download_link"] = "download_link"
    url: str
    expires_at: int
