# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GetUsageGroupBy = Literal["attempt", "day", "job"]

GET_USAGE_GROUP_BY_VALUES: set[GetUsageGroupBy] = {
    "attempt",
    "day",
    "job",
}


def check_get_usage_group_by(value: str) -> GetUsageGroupBy:
    if value in GET_USAGE_GROUP_BY_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GET_USAGE_GROUP_BY_VALUES!r}")
