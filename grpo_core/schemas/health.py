"""The health monitor's thresholds (grpo_core.evaluation.health says what each check means): part of the job's
config, so torch-free."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class HealthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entropy_min: float = Field(0.05, ge=0, description="Warn when mean token entropy falls below this.")
    entropy_drop: float = Field(
        0.8, gt=0, le=1, description="Warn when entropy falls by this share of its value over the first steps."
    )
    length_growth: float = Field(2.5, gt=1, description="Warn when completions grow past this × their start.")
    zero_std_max: float = Field(
        0.75, gt=0, le=1, description="Warn when this share of groups has no signal, averaged over window steps."
    )
    window: int = Field(5, ge=1, le=1000, description="Steps the trend checks (entropy, no signal) look back over.")
    kl_max: float = Field(1.0, gt=0, description="Warn when the KL to the base model exceeds this.")
    mismatch_kl_max: float = Field(
        0.05,
        gt=0,
        description="Warn when the sampler/trainer mismatch KL (off_policy.mismatch_kl) exceeds this, or has grown "
        "tenfold over its first steps' value and past a tenth of this.",
    )
    hacking_z: float = Field(
        2.0,
        ge=0,
        description="Reward hacking needs a validation drop above this many standard errors of the difference.",
    )
