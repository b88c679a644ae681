# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

WebhookEndpointCreateEventTypesItem = Literal[
    "fine_tuning.job.budget_reached",
    "fine_tuning.job.budget_warning",
    "fine_tuning.job.cancelled",
    "fine_tuning.job.failed",
    "fine_tuning.job.succeeded",
]

WEBHOOK_ENDPOINT_CREATE_EVENT_TYPES_ITEM_VALUES: set[WebhookEndpointCreateEventTypesItem] = {
    "fine_tuning.job.budget_reached",
    "fine_tuning.job.budget_warning",
    "fine_tuning.job.cancelled",
    "fine_tuning.job.failed",
    "fine_tuning.job.succeeded",
}


def check_webhook_endpoint_create_event_types_item(value: str) -> WebhookEndpointCreateEventTypesItem:
    if value in WEBHOOK_ENDPOINT_CREATE_EVENT_TYPES_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {WEBHOOK_ENDPOINT_CREATE_EVENT_TYPES_ITEM_VALUES!r}")
