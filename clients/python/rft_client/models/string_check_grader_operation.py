# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

StringCheckGraderOperation = Literal["eq", "ilike", "like", "ne"]

STRING_CHECK_GRADER_OPERATION_VALUES: set[StringCheckGraderOperation] = {
    "eq",
    "ilike",
    "like",
    "ne",
}


def check_string_check_grader_operation(value: str) -> StringCheckGraderOperation:
    if value in STRING_CHECK_GRADER_OPERATION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {STRING_CHECK_GRADER_OPERATION_VALUES!r}")
