# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ExecutionRolloutEngine = Literal["merged", "transformers", "vllm"]

EXECUTION_ROLLOUT_ENGINE_VALUES: set[ExecutionRolloutEngine] = {
    "merged",
    "transformers",
    "vllm",
}


def check_execution_rollout_engine(value: str) -> ExecutionRolloutEngine:
    if value in EXECUTION_ROLLOUT_ENGINE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EXECUTION_ROLLOUT_ENGINE_VALUES!r}")
