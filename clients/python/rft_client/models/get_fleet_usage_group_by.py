# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GetFleetUsageGroupBy = Literal["day", "project"]

GET_FLEET_USAGE_GROUP_BY_VALUES: set[GetFleetUsageGroupBy] = {
    "day",
    "project",
}


def check_get_fleet_usage_group_by(value: str) -> GetFleetUsageGroupBy:
    if value in GET_FLEET_USAGE_GROUP_BY_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GET_FLEET_USAGE_GROUP_BY_VALUES!r}")
