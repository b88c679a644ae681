# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ExecutionShardingType0 = Literal["fsdp", "replicate"]

EXECUTION_SHARDING_TYPE_0_VALUES: set[ExecutionShardingType0] = {
    "fsdp",
    "replicate",
}


def check_execution_sharding_type_0(value: str) -> ExecutionShardingType0:
    if value in EXECUTION_SHARDING_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EXECUTION_SHARDING_TYPE_0_VALUES!r}")
