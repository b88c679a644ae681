# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.webhook_endpoint_create_event_types_item import (
    WebhookEndpointCreateEventTypesItem,
    check_webhook_endpoint_create_event_types_item,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookEndpointCreate")


@_attrs_define
class WebhookEndpointCreate:
    """Body of ``POST /v1/webhook_endpoints``.

    Attributes:
        url (str): http(s) URL that receives a signed POST per event.
        event_types (list[WebhookEndpointCreateEventTypesItem] | Unset): Events to send; default all.
    """

    url: str
    event_types: list[WebhookEndpointCreateEventTypesItem] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        event_types: list[str] | Unset = UNSET
        if not isinstance(self.event_types, Unset):
            event_types = []
            for event_types_item_data in self.event_types:
                event_types_item: str = event_types_item_data
                event_types.append(event_types_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if event_types is not UNSET:
            field_dict["event_types"] = event_types

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        url = d.pop("url")

        _event_types = d.pop("event_types", UNSET)
        event_types: list[WebhookEndpointCreateEventTypesItem] | Unset = UNSET
        if _event_types is not UNSET:
            event_types = []
            for event_types_item_data in _event_types:
                event_types_item = check_webhook_endpoint_create_event_types_item(event_types_item_data)

                event_types.append(event_types_item)

        webhook_endpoint_create = cls(
            url=url,
            event_types=event_types,
        )

        return webhook_endpoint_create
