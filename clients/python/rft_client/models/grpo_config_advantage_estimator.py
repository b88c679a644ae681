# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigAdvantageEstimator = Literal["grpo", "reinforce_pp_baseline", "rloo"]

GRPO_CONFIG_ADVANTAGE_ESTIMATOR_VALUES: set[GRPOConfigAdvantageEstimator] = {
    "grpo",
    "reinforce_pp_baseline",
    "rloo",
}


def check_grpo_config_advantage_estimator(value: str) -> GRPOConfigAdvantageEstimator:
    if value in GRPO_CONFIG_ADVANTAGE_ESTIMATOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_ADVANTAGE_ESTIMATOR_VALUES!r}")
