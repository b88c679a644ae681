# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ListRunsOrder = Literal["asc", "desc"]

LIST_RUNS_ORDER_VALUES: set[ListRunsOrder] = {
    "asc",
    "desc",
}


def check_list_runs_order(value: str) -> ListRunsOrder:
    if value in LIST_RUNS_ORDER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_RUNS_ORDER_VALUES!r}")
