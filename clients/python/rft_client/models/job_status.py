# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

JobStatus = Literal[
    "cancelled", "cancelling", "failed", "paused", "pausing", "queued", "running", "succeeded", "validating_files"
]

JOB_STATUS_VALUES: set[JobStatus] = {
    "cancelled",
    "cancelling",
    "failed",
    "paused",
    "pausing",
    "queued",
    "running",
    "succeeded",
    "validating_files",
}


def check_job_status(value: str) -> JobStatus:
    if value in JOB_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_STATUS_VALUES!r}")
