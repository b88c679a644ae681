# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigReasoningEffort = Literal["default", "high", "low", "medium"]

GRPO_CONFIG_REASONING_EFFORT_VALUES: set[GRPOConfigReasoningEffort] = {
    "default",
    "high",
    "low",
    "medium",
}


def check_grpo_config_reasoning_effort(value: str) -> GRPOConfigReasoningEffort:
    if value in GRPO_CONFIG_REASONING_EFFORT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_REASONING_EFFORT_VALUES!r}")
