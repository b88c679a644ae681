# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigLossAggregation = Literal["bnpo", "seq_mean_token_mean", "seq_mean_token_sum_norm", "token_mean"]

GRPO_CONFIG_LOSS_AGGREGATION_VALUES: set[GRPOConfigLossAggregation] = {
    "bnpo",
    "seq_mean_token_mean",
    "seq_mean_token_sum_norm",
    "token_mean",
}


def check_grpo_config_loss_aggregation(value: str) -> GRPOConfigLossAggregation:
    if value in GRPO_CONFIG_LOSS_AGGREGATION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_LOSS_AGGREGATION_VALUES!r}")
