"""Grader pre-flight shapes, as OpenAI's ``/v1/fine_tuning/alpha/graders/{validate,run}``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from grpo_core.schemas.graders import GraderSpec


class ValidateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grader: GraderSpec


class ValidateResponse(BaseModel):
    grader: dict[str, Any]


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grader: GraderSpec
    model_sample: str = Field(description="The completion to score (sample.output_text).")
    item: dict[str, Any] = Field(default_factory=dict, description="The dataset row (item.* in templates).")


class RunResponse(BaseModel):
    reward: float
    sub_rewards: dict[str, Any]
    model_grader_token_usage_per_model: dict[str, Any]
    metadata: dict[str, Any]
