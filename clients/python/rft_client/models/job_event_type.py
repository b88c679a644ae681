# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

JobEventType = Literal["message", "metrics"]

JOB_EVENT_TYPE_VALUES: set[JobEventType] = {
    "message",
    "metrics",
}


def check_job_event_type(value: str) -> JobEventType:
    if value in JOB_EVENT_TYPE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_EVENT_TYPE_VALUES!r}")
