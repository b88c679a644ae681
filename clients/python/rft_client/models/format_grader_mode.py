# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

FormatGraderMode = Literal["fullmatch", "search"]

FORMAT_GRADER_MODE_VALUES: set[FormatGraderMode] = {
    "fullmatch",
    "search",
}


def check_format_grader_mode(value: str) -> FormatGraderMode:
    if value in FORMAT_GRADER_MODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {FORMAT_GRADER_MODE_VALUES!r}")
