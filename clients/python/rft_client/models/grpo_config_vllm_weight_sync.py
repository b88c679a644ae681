# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigVllmWeightSync = Literal["auto", "lora", "merged"]

GRPO_CONFIG_VLLM_WEIGHT_SYNC_VALUES: set[GRPOConfigVllmWeightSync] = {
    "auto",
    "lora",
    "merged",
}


def check_grpo_config_vllm_weight_sync(value: str) -> GRPOConfigVllmWeightSync:
    if value in GRPO_CONFIG_VLLM_WEIGHT_SYNC_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_VLLM_WEIGHT_SYNC_VALUES!r}")
