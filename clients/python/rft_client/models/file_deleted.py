# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="FileDeleted")


@_attrs_define
class FileDeleted:
    """Answer of ``DELETE /v1/files/{file_id}`` (OpenAI's shape).

    Attributes:
        id (str):
        deleted (bool | Unset):  Default: True.
        object_ (Literal['file'] | Unset):  Default: 'file'.
    """

    id: str
    deleted: bool | Unset = True
    object_: Literal["file"] | Unset = "file"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        deleted = self.deleted

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
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
        id = d.pop("id")

        deleted = d.pop("deleted", UNSET)

        object_ = cast(Literal["file"] | Unset, d.pop("object", UNSET))
        if object_ != "file" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'file', got '{object_}'")

        file_deleted = cls(
            id=id,
            deleted=deleted,
            object_=object_,
        )

        file_deleted.additional_properties = d
        return file_deleted

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
