"""Money on the API: ``POST /v1/fine_tuning/jobs/estimate`` (what a job will cost, before it runs), ``GET
/v1/billing`` (the caller's prices, budget and month), and the operator's ``/v1/admin/projects/{id}/billing`` and
``/v1/admin/billing/changes`` (ADMIN_TOKEN). How costs, estimates and budgets work: docs/guides/costs.md."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.billing import estimate as estimates
from api.billing import service
from api.billing.schemas import BillingChangePage, BillingUpdate, JobEstimate, ProjectBilling
from api.core.deps import CurrentProject, QueueDep, ReadSessionDep, SessionDep, SettingsDep, StoreDep, require_admin
from api.core.errors import ERROR_RESPONSES, ErrorResponse
from api.jobs.schemas import JobCreate

estimate_router = APIRouter(prefix="/v1/fine_tuning/jobs", tags=["fine_tuning"], responses=ERROR_RESPONSES)
router = APIRouter(prefix="/v1/billing", tags=["billing"], responses=ERROR_RESPONSES)
_ADMIN_RESPONSES = {**ERROR_RESPONSES, 403: {"model": ErrorResponse, "description": "ADMIN_TOKEN is not configured"}}
admin = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[Depends(require_admin)], responses=_ADMIN_RESPONSES)


@estimate_router.post("/estimate")
def estimate_job(
    body: JobCreate,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    project: CurrentProject,
    device_kind: Annotated[
        str | None, Query(max_length=256, description="Estimate for this device kind (default: what a worker gives).")
    ] = None,
) -> JobEstimate:
    """What the job ``body`` (the body ``POST /v1/fine_tuning/jobs`` takes, checked the same way: the same 4xx)
    would take and cost: step time, device time, cost at this project's prices, each with a range, what drives
    them, and how sure it is. Nothing is stored."""
    return estimates.estimate(session, store, settings, project, body, device_kind)


@router.get("")
def get_billing(session: ReadSessionDep, settings: SettingsDep, project: CurrentProject) -> ProjectBilling:
    """This project's prices in force, its monthly budget and what it spent this UTC month."""
    return service.billing(session, settings, project)


@admin.get("/projects/{project_id}/billing")
def get_project_billing(project_id: str, session: ReadSessionDep, settings: SettingsDep) -> ProjectBilling:
    """A project's prices, monthly budget and month so far."""
    service.require_project(session, project_id)
    return service.billing(session, settings, project_id)


@admin.post("/projects/{project_id}/billing")
def set_project_billing(
    project_id: str, body: BillingUpdate, session: SessionDep, settings: SettingsDep, queue: QueueDep
) -> ProjectBilling:
    """Set a project's own prices or monthly budget (each left out: unchanged). Every change is logged
    (``GET /v1/admin/billing/changes``); a raised budget lets its queued jobs go at once."""
    return service.update(session, settings, queue, project_id, body, actor="admin-api")


@admin.get("/billing/changes")
def list_billing_changes(
    session: ReadSessionDep,
    project_id: Annotated[str | None, Query(description="Only this project's changes.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> BillingChangePage:
    """Changes of prices and budgets (the operator's and the projects' own job budgets), newest first."""
    return BillingChangePage(data=service.changes(session, project_id, limit))
