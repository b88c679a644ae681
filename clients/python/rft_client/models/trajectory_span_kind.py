# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

TrajectorySpanKind = Literal["model", "tool", "user"]

TRAJECTORY_SPAN_KIND_VALUES: set[TrajectorySpanKind] = {
    "model",
    "tool",
    "user",
}


def check_trajectory_span_kind(value: str) -> TrajectorySpanKind:
    if value in TRAJECTORY_SPAN_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TRAJECTORY_SPAN_KIND_VALUES!r}")
