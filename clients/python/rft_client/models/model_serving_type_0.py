# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ModelServingType0 = Literal["not_served", "on_first_use", "ready", "starting", "unavailable"]

MODEL_SERVING_TYPE_0_VALUES: set[ModelServingType0] = {
    "not_served",
    "on_first_use",
    "ready",
    "starting",
    "unavailable",
}


def check_model_serving_type_0(value: str) -> ModelServingType0:
    if value in MODEL_SERVING_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODEL_SERVING_TYPE_0_VALUES!r}")
