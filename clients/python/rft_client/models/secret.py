# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Secret")


@_attrs_define
class Secret:
    """A project secret as the API shows it: never its value.

    Attributes:
        created_at (int):
        hint (str): Enough to recognise it, never to use it: '…' and its last 4 characters (a value shorter than 16
            characters: only its length).
        name (str):
        updated_at (int): When its value was last written (rotated).
        object_ (Literal['secret'] | Unset):  Default: 'secret'.
    """

    created_at: int
    hint: str
    name: str
    updated_at: int
    object_: Literal["secret"] | Unset = "secret"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        hint = self.hint

        name = self.name

        updated_at = self.updated_at

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "hint": hint,
                "name": name,
                "updated_at": updated_at,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        hint = d.pop("hint")

        name = d.pop("name")

        updated_at = d.pop("updated_at")

        object_ = cast(Literal["secret"] | Unset, d.pop("object", UNSET))
        if object_ != "secret" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'secret', got '{object_}'")

        secret = cls(
            created_at=created_at,
            hint=hint,
            name=name,
            updated_at=updated_at,
            object_=object_,
        )

        secret.additional_properties = d
        return secret

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
