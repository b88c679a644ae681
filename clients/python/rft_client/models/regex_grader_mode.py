# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

RegexGraderMode = Literal["fullmatch", "search"]

REGEX_GRADER_MODE_VALUES: set[RegexGraderMode] = {
    "fullmatch",
    "search",
}


def check_regex_grader_mode(value: str) -> RegexGraderMode:
    if value in REGEX_GRADER_MODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REGEX_GRADER_MODE_VALUES!r}")
