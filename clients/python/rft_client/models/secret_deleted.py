# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SecretDeleted")


@_attrs_define
class SecretDeleted:
    """
    Attributes:
        name (str):
        deleted (bool | Unset):  Default: True.
        object_ (Literal['secret.deleted'] | Unset):  Default: 'secret.deleted'.
    """

    name: str
    deleted: bool | Unset = True
    object_: Literal["secret.deleted"] | Unset = "secret.deleted"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        deleted = self.deleted

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if deleted is not UNSET:
            field_dict["deleted"] = deleted
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        deleted = d.pop("deleted", UNSET)

        object_ = cast(Literal["secret.deleted"] | Unset, d.pop("object", UNSET))
        if object_ != "secret.deleted" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'secret.deleted', got '{object_}'")

        secret_deleted = cls(
            name=name,
            deleted=deleted,
            object_=object_,
        )

        secret_deleted.additional_properties = d
        return secret_deleted

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
