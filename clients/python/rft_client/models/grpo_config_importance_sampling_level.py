# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigImportanceSamplingLevel = Literal["sequence", "token"]

GRPO_CONFIG_IMPORTANCE_SAMPLING_LEVEL_VALUES: set[GRPOConfigImportanceSamplingLevel] = {
    "sequence",
    "token",
}


def check_grpo_config_importance_sampling_level(value: str) -> GRPOConfigImportanceSamplingLevel:
    if value in GRPO_CONFIG_IMPORTANCE_SAMPLING_LEVEL_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_IMPORTANCE_SAMPLING_LEVEL_VALUES!r}")
