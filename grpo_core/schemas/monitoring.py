"""What a run reports and keeps on the way (``MonitoringConfig``, a part of grpo_core.schemas.config.GRPOConfig) and
the RL-readiness probe before it (``PreflightConfig``). Pydantic only, like the rest of the config."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from grpo_core.schemas.health import HealthConfig


class PreflightConfig(BaseModel):
    """The RL-readiness probe before training: the base model sampled ``samples`` times on ``prompts`` training
    prompts and scored by the job's graders; the job shows the report and a verdict."""

    # the probe: grpo_core.evaluation.probe; the report read from it: grpo_core.evaluation.readiness

    model_config = ConfigDict(extra="forbid")

    prompts: int = Field(64, ge=1, le=4096, description="Training prompts probed (all of them if the file is smaller).")
    samples: int = Field(8, ge=2, le=64, description="Completions per probed prompt (k).")
    pass_threshold: float = Field(0.5, description="A sample passes when its reward is at least this.")
    drop_zero_variance_prompts: bool = Field(
        False,
        description="Train without the probed prompts whose k rewards were all equal (no GRPO signal); the job "
        "still runs its planned number of steps, on the rest.",
    )
    compare_after: bool = Field(
        True, description="Probe the trained adapter on the same prompts after the last step and compare per prompt."
    )
    only: bool = Field(False, description="Report and stop: no training (POST /v1/fine_tuning/jobs/preflight sets it).")


class MonitoringConfig(BaseModel):
    """What the run reports and keeps on the way: validation, checkpoints, logged rollouts, health warnings,
    and when a grader's errors fail the job."""

    model_config = ConfigDict(extra="forbid")

    eval_interval: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="Score the validation file every N steps (and always after the last "
        "step); 0 = only after the last step. Needs a validation_file.",
    )
    eval_samples: int = Field(1, ge=1, le=64, description="Completions per validation prompt.")
    eval_temperature: float = Field(0.0, ge=0, le=2.0, description="0 = greedy validation decoding.")
    checkpoint_interval: int = Field(
        0, ge=0, le=1_000_000, description="Save and upload the adapter every N steps; 0 = only at the end."
    )
    sample_log_count: int = Field(
        4, ge=0, le=256, description="Rollouts per step kept in the metrics event for inspection."
    )
    health: HealthConfig = Field(default_factory=HealthConfig, description="Thresholds of the health warnings.")
    max_grader_error_rate: float = Field(
        0.8,
        ge=0,
        le=1,
        description="Fail the job when a grader errors (raises, times out, returns a non-number) on more than this "
        "share of a step's completions; below it an error scores 0 and is counted in the metrics.",
    )
    preflight: PreflightConfig | None = Field(
        None,
        description="Probe the base model before training and report whether GRPO can learn (the job's "
        "readiness report); null: no probe. The job's top-level `preflight: true` sets the defaults.",
    )
