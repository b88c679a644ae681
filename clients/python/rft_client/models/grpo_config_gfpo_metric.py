# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigGfpoMetric = Literal["length", "reward_per_token"]

GRPO_CONFIG_GFPO_METRIC_VALUES: set[GRPOConfigGfpoMetric] = {
    "length",
    "reward_per_token",
}


def check_grpo_config_gfpo_metric(value: str) -> GRPOConfigGfpoMetric:
    if value in GRPO_CONFIG_GFPO_METRIC_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_GFPO_METRIC_VALUES!r}")
