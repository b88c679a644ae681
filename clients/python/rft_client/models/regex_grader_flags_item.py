# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

RegexGraderFlagsItem = Literal["DOTALL", "IGNORECASE", "MULTILINE"]

REGEX_GRADER_FLAGS_ITEM_VALUES: set[RegexGraderFlagsItem] = {
    "DOTALL",
    "IGNORECASE",
    "MULTILINE",
}


def check_regex_grader_flags_item(value: str) -> RegexGraderFlagsItem:
    if value in REGEX_GRADER_FLAGS_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REGEX_GRADER_FLAGS_ITEM_VALUES!r}")
