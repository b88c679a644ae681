# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ExecutionPrecision = Literal["bf16", "fp32"]

EXECUTION_PRECISION_VALUES: set[ExecutionPrecision] = {
    "bf16",
    "fp32",
}


def check_execution_precision(value: str) -> ExecutionPrecision:
    if value in EXECUTION_PRECISION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EXECUTION_PRECISION_VALUES!r}")
