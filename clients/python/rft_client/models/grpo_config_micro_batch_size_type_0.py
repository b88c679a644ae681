# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigMicroBatchSizeType0 = Literal["auto"]

GRPO_CONFIG_MICRO_BATCH_SIZE_TYPE_0_VALUES: set[GRPOConfigMicroBatchSizeType0] = {
    "auto",
}


def check_grpo_config_micro_batch_size_type_0(value: str) -> GRPOConfigMicroBatchSizeType0:
    if value in GRPO_CONFIG_MICRO_BATCH_SIZE_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_MICRO_BATCH_SIZE_TYPE_0_VALUES!r}")
