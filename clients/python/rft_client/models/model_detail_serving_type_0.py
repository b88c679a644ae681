# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ModelDetailServingType0 = Literal["not_served", "on_first_use", "ready", "starting", "unavailable"]

MODEL_DETAIL_SERVING_TYPE_0_VALUES: set[ModelDetailServingType0] = {
    "not_served",
    "on_first_use",
    "ready",
    "starting",
    "unavailable",
}


def check_model_detail_serving_type_0(value: str) -> ModelDetailServingType0:
    if value in MODEL_DETAIL_SERVING_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODEL_DETAIL_SERVING_TYPE_0_VALUES!r}")
