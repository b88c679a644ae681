# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ExecutionBackendType0 = Literal["gloo", "nccl"]

EXECUTION_BACKEND_TYPE_0_VALUES: set[ExecutionBackendType0] = {
    "gloo",
    "nccl",
}


def check_execution_backend_type_0(value: str) -> ExecutionBackendType0:
    if value in EXECUTION_BACKEND_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EXECUTION_BACKEND_TYPE_0_VALUES!r}")
