# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigScaleRewards = Literal["batch", "group", "none"]

GRPO_CONFIG_SCALE_REWARDS_VALUES: set[GRPOConfigScaleRewards] = {
    "batch",
    "group",
    "none",
}


def check_grpo_config_scale_rewards(value: str) -> GRPOConfigScaleRewards:
    if value in GRPO_CONFIG_SCALE_REWARDS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_SCALE_REWARDS_VALUES!r}")
