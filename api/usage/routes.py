"""``/v1/usage``: what the caller's project used, by day or by job; ``/v1/admin/usage``: every project's
(ADMIN_TOKEN). What each number measures: api.usage.metering and docs/guides/usage.md."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.core.deps import CurrentProject, ReadSessionDep, SettingsDep, require_admin
from api.core.errors import ERROR_RESPONSES, ErrorResponse
from api.db.models import UsageKind
from api.usage import service
from api.usage.prices import price_book
from api.usage.schemas import AdminGroupBy, GroupBy, UsagePage

router = APIRouter(prefix="/v1/usage", tags=["usage"], responses=ERROR_RESPONSES)
_ADMIN_RESPONSES = {**ERROR_RESPONSES, 403: {"model": ErrorResponse, "description": "ADMIN_TOKEN is not configured"}}
admin = APIRouter(
    prefix="/v1/admin/usage", tags=["admin"], dependencies=[Depends(require_admin)], responses=_ADMIN_RESPONSES
)

StartTime = Annotated[int | None, Query(ge=0, description="Unix seconds: records of attempts started at or after it.")]
EndTime = Annotated[int | None, Query(ge=0, description="Unix seconds: records of attempts started before it.")]
Kind = Annotated[
    UsageKind | None, Query(description="Only records of this kind: job, eval, session, inference, serving.")
]
Limit = Annotated[int, Query(ge=1, le=1000, description="Buckets at most (totals cover every matched record).")]


@router.get("")
def get_usage(
    session: ReadSessionDep,
    settings: SettingsDep,
    project: CurrentProject,
    start_time: StartTime = None,
    end_time: EndTime = None,
    job_id: Annotated[str | None, Query(description="Only this job's attempts (404: not this project's).")] = None,
    kind: Kind = None,
    group_by: Annotated[
        GroupBy, Query(description="day: one bucket a UTC day; job: one a job; attempt: one an attempt of a job.")
    ] = "day",
    limit: Limit = 100,
) -> UsagePage:
    """Device-seconds (by device kind), steps, sampled and trained tokens, grader calls and seconds, eval and
    inference tokens of this project, newest bucket first, each with its cost; ``totals`` sums every matched
    record."""
    f = service.UsageFilter(project, start_time, end_time, job_id, kind)
    return service.usage_page(session, f, group_by, limit, price_book(session, settings, [project]))


@admin.get("")
def get_fleet_usage(
    session: ReadSessionDep,
    settings: SettingsDep,
    start_time: StartTime = None,
    end_time: EndTime = None,
    project_id: Annotated[str | None, Query(description="Only this project's records.")] = None,
    kind: Kind = None,
    group_by: Annotated[AdminGroupBy, Query(description="project: one bucket a project; day: a project a day.")] = (
        "project"
    ),
    limit: Limit = 1000,
) -> UsagePage:
    """Every project's usage, by project (or by project and day), for the operator."""
    f = service.UsageFilter(project_id, start_time, end_time, kind=kind)
    group: service.Group = "project" if group_by == "project" else "project_day"
    return service.usage_page(session, f, group, limit, price_book(session, settings))
