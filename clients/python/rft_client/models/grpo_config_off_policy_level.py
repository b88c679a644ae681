# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigOffPolicyLevel = Literal["sequence", "token"]

GRPO_CONFIG_OFF_POLICY_LEVEL_VALUES: set[GRPOConfigOffPolicyLevel] = {
    "sequence",
    "token",
}


def check_grpo_config_off_policy_level(value: str) -> GRPOConfigOffPolicyLevel:
    if value in GRPO_CONFIG_OFF_POLICY_LEVEL_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_OFF_POLICY_LEVEL_VALUES!r}")
