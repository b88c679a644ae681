"""Grader pre-flight, as OpenAI's ``/v1/fine_tuning/alpha/graders/{validate,run}``: check a grader and score a
sample with it before spending GPU time on a job."""

from __future__ import annotations

from fastapi import APIRouter

from api.core.deps import CurrentProject, SettingsDep
from api.graders import service as svc
from api.graders.schemas import RunRequest, RunResponse, ValidateRequest, ValidateResponse

router = APIRouter(prefix="/v1/fine_tuning/alpha/graders", tags=["graders"])


@router.post("/validate")
def validate_grader(body: ValidateRequest, settings: SettingsDep, project: CurrentProject) -> ValidateResponse:
    """Schema, formula, sandbox availability and (python) import in the sandbox; 422 with the reason."""
    svc.validate(body.grader, settings.grader_env())
    return ValidateResponse(grader=body.grader.model_dump(mode="json", by_alias=True))


@router.post("/run")
def run_grader(body: RunRequest, settings: SettingsDep, project: CurrentProject) -> RunResponse:
    """Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags."""
    return svc.run_grader(body.grader, body.model_sample, body.item, settings.grader_env())
