# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigMaxTokensPerMicroBatchType0 = Literal["auto"]

GRPO_CONFIG_MAX_TOKENS_PER_MICRO_BATCH_TYPE_0_VALUES: set[GRPOConfigMaxTokensPerMicroBatchType0] = {
    "auto",
}


def check_grpo_config_max_tokens_per_micro_batch_type_0(value: str) -> GRPOConfigMaxTokensPerMicroBatchType0:
    if value in GRPO_CONFIG_MAX_TOKENS_PER_MICRO_BATCH_TYPE_0_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_MAX_TOKENS_PER_MICRO_BATCH_TYPE_0_VALUES!r}"
    )
