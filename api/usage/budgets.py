"""Budgets (no FastAPI): a project's monthly budget, and what a job's budget says of its cost.

A project's month is the UTC calendar month; what it spent is the cost of its usage records started in it (jobs,
eval runs, training sessions, inference: api.usage.prices, the one meter). At or over its ``monthly_budget`` it
is over budget: new jobs, resumes and training-API calls are refused with 402 ``budget_exceeded`` (the `tinker`
SDK raises its ``BillingError``), and its queued jobs wait, saying why (api.jobs.scheduling). Jobs that already
run go on to their own budgets: a monthly budget holds new work back, it stops nothing half-way.

A job's budget (``max_cost`` in the project's unit, ``max_device_hours``) is compared with its cost at every step it
posts (api.jobs.budget): at 80 % of either a warning, at 100 % a pause at a checkpoint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.core.errors import ServiceError
from api.core.settings import ApiSettings
from api.db.models import Project
from api.usage.prices import Prices, price_book, prices_of
from api.usage.schemas import Cost
from api.usage.service import spent

WARN_AT = 0.8  # a job's budget warns once at this fraction of either cap
Alert = Literal["warning", "reached"]


class BudgetExceeded(ServiceError):
    """402: a budget is spent (the project's monthly one, or the job's own on resume). The message names the budget,
    what was spent and by how much it is over."""

    status_code = 402
    type = "billing_error"

    def __init__(self, message: str, *, param: str) -> None:
        super().__init__(message, param=param, code="budget_exceeded", headers={"x-should-retry": "false"})


def month_start(t: float) -> float:
    """Unix time of the start of ``t``'s UTC calendar month."""
    d = datetime.fromtimestamp(t, UTC)
    return datetime(d.year, d.month, 1, tzinfo=UTC).timestamp()


def month_of(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m")


def money(amount: float, unit: str) -> str:
    """``12.34 USD`` or ``1.5 device-hours``: how a message writes an amount."""
    if unit == "device_hour":
        return f"{amount:.4g} device-hours"
    return f"{amount:.4f} {unit}" if amount < 1 else f"{amount:.2f} {unit}"


@dataclass(frozen=True)
class MonthlyBudget:
    """A project's month: its prices, its budget (None: none) and what it spent."""

    project_id: str
    prices: Prices
    budget: float | None
    spent: Cost
    month: str

    @property
    def over(self) -> bool:
        return self.budget is not None and self.spent.amount >= self.budget

    def reason(self) -> str:
        over = self.spent.amount - (self.budget or 0.0)
        return (
            f"project {self.project_id} has spent {money(self.spent.amount, self.spent.unit)} of its monthly budget "
            f"of {money(self.budget or 0.0, self.spent.unit)} for {self.month} (over by "
            f"{money(over, self.spent.unit)})"
        )


def monthly(session: Session, settings: ApiSettings, project_id: str, t: float | None = None) -> MonthlyBudget:
    """The project's month as of ``t`` (now)."""
    t = time.time() if t is None else t
    row = session.execute(select(Project.prices, Project.monthly_budget).where(Project.id == project_id)).first()
    sheet, budget = (row[0], row[1]) if row is not None else (None, None)
    prices = prices_of(settings, sheet)
    return MonthlyBudget(project_id, prices, budget, spent(session, project_id, month_start(t), prices), month_of(t))


def check_project(session: Session, settings: ApiSettings, project_id: str, refused: str) -> None:
    """402 naming ``monthly_budget`` when the project is over its monthly budget; ``refused`` says what is refused
    ("new jobs", "training-API calls")."""
    if session.scalar(select(Project.monthly_budget).where(Project.id == project_id)) is None:
        return  # no budget: nothing to sum (every training-API request asks)
    month = monthly(session, settings, project_id)
    if month.over:
        raise BudgetExceeded(
            f"{month.reason()}: {refused} are refused until an operator raises the budget or the month ends",
            param="monthly_budget",
        )


def over_budget(session: Session, settings: ApiSettings, project_ids: set[str], t: float) -> dict[str, str]:
    """Of ``project_ids``, those over their monthly budget, with the reason their queued jobs wait (one query for
    the budgets, one a project that has one)."""
    budgets = dict(
        session.execute(
            select(Project.id, Project.monthly_budget).where(
                Project.id.in_(list(project_ids)), Project.monthly_budget.is_not(None)
            )
        ).all()
    )
    if not budgets:
        return {}
    book, since, out = price_book(session, settings, budgets), month_start(t), {}
    for pid, budget in budgets.items():
        prices = book.of(pid)
        month = MonthlyBudget(pid, prices, budget, spent(session, pid, since, prices), month_of(t))
        if month.over:
            out[pid] = f"waiting: {month.reason()}"
    return out


def job_alert(cost: Cost, budget: dict[str, Any] | None) -> tuple[Alert | None, str]:
    """Which alert a job's cost calls for under its budget, and what it spent of which cap, in words."""
    if not budget:
        return None, ""
    shares: list[tuple[float, str]] = []
    if budget.get("max_cost"):
        cap = float(budget["max_cost"])
        shares.append((cost.amount / cap, f"{money(cost.amount, cost.unit)} of its max_cost {money(cap, cost.unit)}"))
    if budget.get("max_device_hours"):
        cap = float(budget["max_device_hours"])
        words = f"{cost.device_hours:.4g} of its max_device_hours {cap:.4g}"
        shares.append((cost.device_hours / cap, words))
    if not shares:
        return None, ""
    share, words = max(shares)
    if share >= 1:
        return "reached", words
    return ("warning" if share >= WARN_AT else None), words
