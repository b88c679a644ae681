# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigOffPolicyCorrection = Literal["mis", "tis"]

GRPO_CONFIG_OFF_POLICY_CORRECTION_VALUES: set[GRPOConfigOffPolicyCorrection] = {
    "mis",
    "tis",
}


def check_grpo_config_off_policy_correction(value: str) -> GRPOConfigOffPolicyCorrection:
    if value in GRPO_CONFIG_OFF_POLICY_CORRECTION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_OFF_POLICY_CORRECTION_VALUES!r}")
