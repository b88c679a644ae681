# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

GRPOConfigRecipeType0 = Literal["dapo", "deepseekmath", "dr_grpo", "gfpo", "gspo", "r1_zero", "reinforce_pp", "rloo"]

GRPO_CONFIG_RECIPE_TYPE_0_VALUES: set[GRPOConfigRecipeType0] = {
    "dapo",
    "deepseekmath",
    "dr_grpo",
    "gfpo",
    "gspo",
    "r1_zero",
    "reinforce_pp",
    "rloo",
}


def check_grpo_config_recipe_type_0(value: str) -> GRPOConfigRecipeType0:
    if value in GRPO_CONFIG_RECIPE_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {GRPO_CONFIG_RECIPE_TYPE_0_VALUES!r}")
