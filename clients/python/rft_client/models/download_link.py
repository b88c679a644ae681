# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DownloadLink")


@_attrs_define
class DownloadLink:
    """
    Attributes:
        expires_at (int):
        url (str):
        object_ (Literal['download_link'] | Unset):  Default: 'download_link'.
    """

    expires_at: int
    url: str
    object_: Literal["download_link"] | Unset = "download_link"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        expires_at = self.expires_at

        url = self.url

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "expires_at": expires_at,
                "url": url,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expires_at = d.pop("expires_at")

        url = d.pop("url")

        object_ = cast(Literal["download_link"] | Unset, d.pop("object", UNSET))
        if object_ != "download_link" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'download_link', got '{object_}'")

        download_link = cls(
            expires_at=expires_at,
            url=url,
            object_=object_,
        )

        download_link.additional_properties = d
        return download_link

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
