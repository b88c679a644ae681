# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigRewardAggregation = Literal["normalize_then_sum", "sum_then_normalize"]

GRPO_CONFIG_REWARD_AGGREGATION_VALUES: set[GRPOConfigRewardAggregation] = {
    "normalize_then_sum",
    "sum_then_normalize",
}


def check_grpo_config_reward_aggregation(value: str) -> GRPOConfigRewardAggregation:
    if value in GRPO_CONFIG_REWARD_AGGREGATION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_REWARD_AGGREGATION_VALUES!r}")
