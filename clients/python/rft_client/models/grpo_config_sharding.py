# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigSharding = Literal["fsdp", "replicate"]

GRPO_CONFIG_SHARDING_VALUES: set[GRPOConfigSharding] = {
    "fsdp",
    "replicate",
}


def check_grpo_config_sharding(value: str) -> GRPOConfigSharding:
    if value in GRPO_CONFIG_SHARDING_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_SHARDING_VALUES!r}")
