# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigKlEstimator = Literal["k1", "k2", "k3"]

GRPO_CONFIG_KL_ESTIMATOR_VALUES: set[GRPOConfigKlEstimator] = {
    "k1",
    "k2",
    "k3",
}


def check_grpo_config_kl_estimator(value: str) -> GRPOConfigKlEstimator:
    if value in GRPO_CONFIG_KL_ESTIMATOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_KL_ESTIMATOR_VALUES!r}")
