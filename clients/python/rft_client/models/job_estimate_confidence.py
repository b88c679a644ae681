# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

JobEstimateConfidence = Literal["high", "low", "medium"]

JOB_ESTIMATE_CONFIDENCE_VALUES: set[JobEstimateConfidence] = {
    "high",
    "low",
    "medium",
}


def check_job_estimate_confidence(value: str) -> JobEstimateConfidence:
    if value in JOB_ESTIMATE_CONFIDENCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_ESTIMATE_CONFIDENCE_VALUES!r}")
