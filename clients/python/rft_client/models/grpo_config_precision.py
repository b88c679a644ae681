# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigPrecision = Literal["auto", "bf16", "fp32"]

GRPO_CONFIG_PRECISION_VALUES: set[GRPOConfigPrecision] = {
    "auto",
    "bf16",
    "fp32",
}


def check_grpo_config_precision(value: str) -> GRPOConfigPrecision:
    if value in GRPO_CONFIG_PRECISION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_PRECISION_VALUES!r}")
