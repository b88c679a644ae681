# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookEndpointCreated")


@_attrs_define
class WebhookEndpointCreated:
    """
    Attributes:
        created_at (int):
        event_types (list[str]):
        id (str):
        secret (str): Signing secret ('whsec_' + base64): verify webhook-signature with it. Shown only once.
        url (str):
        object_ (Literal['webhook_endpoint'] | Unset):  Default: 'webhook_endpoint'.
    """

    created_at: int
    event_types: list[str]
    id: str
    secret: str
    url: str
    object_: Literal["webhook_endpoint"] | Unset = "webhook_endpoint"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        event_types = self.event_types

        id = self.id

        secret = self.secret

        url = self.url

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "event_types": event_types,
                "id": id,
                "secret": secret,
                "url": url,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        event_types = cast(list[str], d.pop("event_types"))

        id = d.pop("id")

        secret = d.pop("secret")

        url = d.pop("url")

        object_ = cast(Literal["webhook_endpoint"] | Unset, d.pop("object", UNSET))
        if object_ != "webhook_endpoint" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'webhook_endpoint', got '{object_}'")

        webhook_endpoint_created = cls(
            created_at=created_at,
            event_types=event_types,
            id=id,
            secret=secret,
            url=url,
            object_=object_,
        )

        webhook_endpoint_created.additional_properties = d
        return webhook_endpoint_created

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
