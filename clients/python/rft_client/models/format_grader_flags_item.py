# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

FormatGraderFlagsItem = Literal["DOTALL", "IGNORECASE", "MULTILINE"]

FORMAT_GRADER_FLAGS_ITEM_VALUES: set[FormatGraderFlagsItem] = {
    "DOTALL",
    "IGNORECASE",
    "MULTILINE",
}


def check_format_grader_flags_item(value: str) -> FormatGraderFlagsItem:
    if value in FORMAT_GRADER_FLAGS_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {FORMAT_GRADER_FLAGS_ITEM_VALUES!r}")
