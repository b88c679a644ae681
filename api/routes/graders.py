"""Grader pre-flight, as OpenAI's ``/v1/fine_tuning/alpha/graders/{validate,run}``: check a grader and score a
sample with it before spending GPU time on a job."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from api.deps import CurrentProject, SettingsDep
from api.services import graders as svc
from grpo_core.rewards.schemas import GraderSpec

router = APIRouter(prefix="/v1/fine_tuning/alpha/graders", tags=["graders"])


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


@router.post("/validate")
def validate_grader(body: ValidateRequest, settings: SettingsDep, project: CurrentProject) -> ValidateResponse:
    """Schema, formula, sandbox availability and (python) import in the sandbox; 422 with the reason."""
    svc.validate(body.grader, settings.grader_env())
    return ValidateResponse(grader=body.grader.model_dump(mode="json", by_alias=True))


@router.post("/run")
def run_grader(body: RunRequest, settings: SettingsDep, project: CurrentProject) -> RunResponse:
    """Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags."""
    return RunResponse(**svc.run_grader(body.grader, body.model_sample, body.item, settings.grader_env()))
