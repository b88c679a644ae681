"""Grader pre-flight, as OpenAI's ``/v1/fine_tuning/alpha/graders/{validate,run}``: check a grader and score a
sample with it before spending GPU time on a job."""

from __future__ import annotations

from fastapi import APIRouter

from api.core.deps import CurrentProject, SessionDep, SettingsDep
from api.graders import service as svc
from api.graders.judges import check_own_judges
from api.graders.schemas import RunRequest, RunResponse, ValidateRequest, ValidateResponse

router = APIRouter(prefix="/v1/fine_tuning/alpha/graders", tags=["graders"])


@router.post("/validate")
def validate_grader(
    body: ValidateRequest, session: SessionDep, settings: SettingsDep, project: CurrentProject
) -> ValidateResponse:
    """Schema, formula, sandbox availability, (python) import in the sandbox, and a score_model grader's own
    endpoint and the project secret it names; 4xx with the reason."""
    check_own_judges(session, settings, project, body.grader, "grader")
    svc.validate(body.grader, settings.grader_env())
    return ValidateResponse(grader=body.grader.model_dump(mode="json", by_alias=True))


@router.post("/run")
def run_grader(body: RunRequest, settings: SettingsDep, project: CurrentProject) -> RunResponse:
    """Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags. A score_model grader
    with its own ``endpoint`` is refused here (400): only the worker running a job calls a project's judge."""
    svc.refuse_own_judges(body.grader)
    return svc.run_grader(body.grader, body.model_sample, body.item, settings.grader_env())
