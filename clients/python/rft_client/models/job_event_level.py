# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

JobEventLevel = Literal["error", "info", "warn"]

JOB_EVENT_LEVEL_VALUES: set[JobEventLevel] = {
    "error",
    "info",
    "warn",
}


def check_job_event_level(value: str) -> JobEventLevel:
    if value in JOB_EVENT_LEVEL_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_EVENT_LEVEL_VALUES!r}")
