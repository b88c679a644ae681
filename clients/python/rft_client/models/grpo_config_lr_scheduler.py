# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigLrScheduler = Literal["constant", "cosine", "linear"]

GRPO_CONFIG_LR_SCHEDULER_VALUES: set[GRPOConfigLrScheduler] = {
    "constant",
    "cosine",
    "linear",
}


def check_grpo_config_lr_scheduler(value: str) -> GRPOConfigLrScheduler:
    if value in GRPO_CONFIG_LR_SCHEDULER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_LR_SCHEDULER_VALUES!r}")
