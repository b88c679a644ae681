# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

JobBudgetAlertType0 = Literal["reached", "warning"]

JOB_BUDGET_ALERT_TYPE_0_VALUES: set[JobBudgetAlertType0] = {
    "reached",
    "warning",
}


def check_job_budget_alert_type_0(value: str) -> JobBudgetAlertType0:
    if value in JOB_BUDGET_ALERT_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_BUDGET_ALERT_TYPE_0_VALUES!r}")
