# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

LengthGraderMode = Literal["linear", "soft_overlong"]

LENGTH_GRADER_MODE_VALUES: set[LengthGraderMode] = {
    "linear",
    "soft_overlong",
}


def check_length_grader_mode(value: str) -> LengthGraderMode:
    if value in LENGTH_GRADER_MODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LENGTH_GRADER_MODE_VALUES!r}")
