"""A project's billing (no FastAPI): its prices, monthly budget and month so far; the operator's changes of them,
each logged (api.db.models.BillingChange), and the ring that wakes the jobs a raised budget lets go."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.billing.schemas import BillingChangeOut, BillingUpdate, ProjectBilling
from api.core.errors import NotFound
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import BillingChange, Job, JobStatus, Project, new_id
from api.usage import budgets

log = logging.getLogger(__name__)


def billing(session: Session, settings: ApiSettings, project_id: str) -> ProjectBilling:
    """The project's prices in force, its budget and what it spent this UTC month."""
    month = budgets.monthly(session, settings, project_id)
    p = month.prices
    return ProjectBilling(
        project_id=project_id,
        unit=p.unit,
        device_hour=p.device_hour,
        inference_per_million_tokens=p.inference_per_million_tokens,
        discount=p.discount,
        monthly_budget=month.budget,
        month=month.month,
        spent_this_month=month.spent,
        over_budget=month.over,
    )


def require_project(session: Session, project_id: str) -> Project:
    row = session.get(Project, project_id)
    if row is None:
        raise NotFound(f"no project {project_id!r}", param="project_id")
    return row


def update(
    session: Session, settings: ApiSettings, queue: Doorbell | None, project_id: str, body: BillingUpdate, actor: str
) -> ProjectBilling:
    """Apply an operator's change (a field left out stays), log each changed field with its before and after, and
    ring the project's queued jobs when the change may have let them go (a budget raised or cleared)."""
    row = require_project(session, project_id)
    changes: dict[str, tuple[Any, Any]] = {}
    if body.prices is not None or body.clear_prices:
        after = body.prices.model_dump(exclude_defaults=True) if body.prices is not None else None
        changes["prices"] = (row.prices, after)
        row.prices = after
    if body.monthly_budget is not None or body.clear_monthly_budget:
        changes["monthly_budget"] = (row.monthly_budget, body.monthly_budget)
        row.monthly_budget = body.monthly_budget
    for name, (before, after) in changes.items():
        session.add(
            BillingChange(
                id=new_id("bill"),
                project_id=project_id,
                subject=f"project:{project_id}",
                field=name,
                before=before,
                after=after,
                actor=actor,
            )
        )
        log.warning("billing: %s set %s of %s from %r to %r", actor, name, project_id, before, after)
    session.commit()
    if queue is not None and changes:
        _ring_queued(session, queue, project_id)
    return billing(session, settings, project_id)


def _ring_queued(session: Session, queue: Doorbell, project_id: str) -> None:
    """Ring the project's queued jobs (a budget that held them back may be gone); the reaper rings them later
    anyway when the broker does not answer."""
    ids = session.scalars(select(Job.id).where(Job.project_id == project_id, Job.status == JobStatus.queued))
    for job_id in ids:
        try:
            queue.ring(job_id)
        except Exception:  # the broker is down: the reaper rings unclaimed jobs again
            log.exception("could not ring %s after its project's budget changed", job_id)
            return


def changes(session: Session, project_id: str | None, limit: int) -> list[BillingChangeOut]:
    """The newest changes first (of one project, or every project's)."""
    query = select(BillingChange).order_by(BillingChange.created_at.desc(), BillingChange.id.desc()).limit(limit)
    if project_id is not None:
        query = query.where(BillingChange.project_id == project_id)
    return [BillingChangeOut.model_validate(r.columns()) for r in session.scalars(query)]
