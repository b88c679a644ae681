"""A job's budget (no FastAPI): its cost compared at every step it posts, a warning at 80 % and a pause at the cap,
each with an event and a webhook; raising it; and the checks a resume passes (api.usage.budgets has the rules).

The pause is the user's pause (api.jobs.service.pause_job): the worker learns it from the answer to the step's post,
checkpoints after that step and frees itself, and a resume continues exactly from that checkpoint. A job may so
overrun its cap by the step that crossed it (and the seconds to checkpoint it): a step is never cut in half.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import or_, update
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.db.models import BillingChange, Job, JobStatus, new_id
from api.db.session import rows_changed
from api.jobs.access import get_job
from api.jobs.events import add_event
from api.jobs.schemas import JobBudget
from api.usage import budgets
from api.usage.prices import project_prices
from api.usage.schemas import Cost
from api.usage.service import job_cost
from api.webhooks.service import record_job_event

log = logging.getLogger(__name__)
ORDER = {None: 0, "warning": 1, "reached": 2}


def after_steps(session: Session, settings: ApiSettings, job: Job, step: int) -> Cost:
    """The job's cost after the steps just counted (api.usage.metering.count_steps), and its budget's alerts: each
    sent once (a guarded UPDATE of ``budget_alert`` upward), the cap turning a running job into ``pausing``;
    ``step`` is the newest step posted, what the alert's event is about."""
    cost = job_cost(session, job.id, project_prices(session, settings, job.project_id))
    alert, words = budgets.job_alert(cost, job.budget)
    if alert is None or ORDER[alert] <= ORDER.get(job.budget_alert, 0):
        return cost
    lower = [a for a, n in ORDER.items() if n < ORDER[alert] and a is not None]
    raised = rows_changed(
        session,
        update(Job)
        .where(Job.id == job.id, or_(Job.budget_alert.is_(None), Job.budget_alert.in_(lower)))
        .values(budget_alert=alert),
    )
    if not raised:
        return cost  # another post raised it first
    if alert == "warning":
        add_event(session, job.id, f"Budget warning: the job has spent {words}", level="warn", step=step)
        record_job_event(session, job, "fine_tuning.job.budget_warning")
        return cost
    paused = rows_changed(
        session, update(Job).where(Job.id == job.id, Job.status == JobStatus.running).values(status=JobStatus.pausing)
    )
    then = "it pauses at a checkpoint after this step" if paused else "it was already stopping"
    message = f"Budget reached: the job has spent {words}; {then}. Raise the budget and resume to continue"
    add_event(session, job.id, message, level="warn", step=step)
    record_job_event(session, job, "fine_tuning.job.budget_reached")
    log.info("job %s reached its budget (%s)", job.id, words)
    return cost


def check_resume(session: Session, settings: ApiSettings, job: Job) -> None:
    """402 when a resume would run past a budget: the project's monthly one, or the job's own (raise it first)."""
    budgets.check_project(session, settings, job.project_id, "resumes")
    cost = job_cost(session, job.id, project_prices(session, settings, job.project_id))
    alert, words = budgets.job_alert(cost, job.budget)
    if alert == "reached":
        raise budgets.BudgetExceeded(
            f"job {job.id} has spent {words}: raise its budget (POST /v1/fine_tuning/jobs/{job.id}/budget) "
            "to resume it",
            param="budget",
        )


def set_budget(session: Session, project_id: str, job_id: str, body: JobBudget, actor: str) -> Job:
    """Replace the job's budget (both caps null: none), logged (api.db.models.BillingChange); its alerts start
    again under the new one. A paused job stays paused: resume it."""
    job = get_job(session, project_id, job_id)
    before: dict[str, Any] | None = job.budget
    after = body.model_dump(exclude_none=True) or None
    job.budget, job.budget_alert = after, None
    session.add(
        BillingChange(
            id=new_id("bill"),
            project_id=project_id,
            subject=f"job:{job_id}",
            field="budget",
            before=before,
            after=after,
            actor=actor,
        )
    )
    add_event(session, job_id, f"Budget set: {_words(after)} (was {_words(before)})")
    session.commit()
    session.refresh(job)
    return job


def _words(budget: dict[str, Any] | None) -> str:
    if not budget:
        return "none"
    return ", ".join(f"{k} {v:g}" for k, v in budget.items())
