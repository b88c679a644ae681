# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

RunStatus = Literal["canceled", "completed", "failed", "in_progress", "queued"]

RUN_STATUS_VALUES: set[RunStatus] = {
    "canceled",
    "completed",
    "failed",
    "in_progress",
    "queued",
}


def check_run_status(value: str) -> RunStatus:
    if value in RUN_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {RUN_STATUS_VALUES!r}")
