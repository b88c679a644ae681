# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

UsageKind = Literal["eval", "inference", "job", "serving", "session"]

USAGE_KIND_VALUES: set[UsageKind] = {
    "eval",
    "inference",
    "job",
    "serving",
    "session",
}


def check_usage_kind(value: str) -> UsageKind:
    if value in USAGE_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {USAGE_KIND_VALUES!r}")
