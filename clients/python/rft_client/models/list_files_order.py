# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

ListFilesOrder = Literal["asc", "desc"]

LIST_FILES_ORDER_VALUES: set[ListFilesOrder] = {
    "asc",
    "desc",
}


def check_list_files_order(value: str) -> ListFilesOrder:
    if value in LIST_FILES_ORDER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_FILES_ORDER_VALUES!r}")
