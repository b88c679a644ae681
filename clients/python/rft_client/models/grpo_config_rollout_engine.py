# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigRolloutEngine = Literal["auto", "merged", "transformers", "vllm"]

GRPO_CONFIG_ROLLOUT_ENGINE_VALUES: set[GRPOConfigRolloutEngine] = {
    "auto",
    "merged",
    "transformers",
    "vllm",
}


def check_grpo_config_rollout_engine(value: str) -> GRPOConfigRolloutEngine:
    if value in GRPO_CONFIG_ROLLOUT_ENGINE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_ROLLOUT_ENGINE_VALUES!r}")
