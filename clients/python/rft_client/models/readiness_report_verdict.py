# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ReadinessReportVerdict = Literal["not_ready", "ready", "weak_signal"]

READINESS_REPORT_VERDICT_VALUES: set[ReadinessReportVerdict] = {
    "not_ready",
    "ready",
    "weak_signal",
}


def check_readiness_report_verdict(value: str) -> ReadinessReportVerdict:
    if value in READINESS_REPORT_VERDICT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {READINESS_REPORT_VERDICT_VALUES!r}")
