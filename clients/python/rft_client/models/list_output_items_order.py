# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ListOutputItemsOrder = Literal["asc", "desc"]

LIST_OUTPUT_ITEMS_ORDER_VALUES: set[ListOutputItemsOrder] = {
    "asc",
    "desc",
}


def check_list_output_items_order(value: str) -> ListOutputItemsOrder:
    if value in LIST_OUTPUT_ITEMS_ORDER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_OUTPUT_ITEMS_ORDER_VALUES!r}")
