# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

MathGraderExtract = Literal["answer_tag", "auto", "boxed", "full"]

MATH_GRADER_EXTRACT_VALUES: set[MathGraderExtract] = {
    "answer_tag",
    "auto",
    "boxed",
    "full",
}


def check_math_grader_extract(value: str) -> MathGraderExtract:
    if value in MATH_GRADER_EXTRACT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MATH_GRADER_EXTRACT_VALUES!r}")
