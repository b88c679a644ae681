# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="FileObject")


@_attrs_define
class FileObject:
    """An uploaded JSONL dataset (OpenAI's ``file`` object, plus row count and sha256).

    Attributes:
        bytes_ (int):
        created_at (int):
        filename (str):
        id (str):
        purpose (str):
        row_count (int): Training rows in the file (non-blank lines).
        sha256 (str): SHA-256 of the uploaded bytes.
        object_ (Literal['file'] | Unset):  Default: 'file'.
        status (Literal['processed'] | Unset):  Default: 'processed'.
    """

    bytes_: int
    created_at: int
    filename: str
    id: str
    purpose: str
    row_count: int
    sha256: str
    object_: Literal["file"] | Unset = "file"
    status: Literal["processed"] | Unset = "processed"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bytes_ = self.bytes_

        created_at = self.created_at

        filename = self.filename

        id = self.id

        purpose = self.purpose

        row_count = self.row_count

        sha256 = self.sha256

        object_ = self.object_

        status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bytes": bytes_,
                "created_at": created_at,
                "filename": filename,
                "id": id,
                "purpose": purpose,
                "row_count": row_count,
                "sha256": sha256,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        bytes_ = d.pop("bytes")

        created_at = d.pop("created_at")

        filename = d.pop("filename")

        id = d.pop("id")

        purpose = d.pop("purpose")

        row_count = d.pop("row_count")

        sha256 = d.pop("sha256")

        object_ = cast(Literal["file"] | Unset, d.pop("object", UNSET))
        if object_ != "file" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'file', got '{object_}'")

        status = cast(Literal["processed"] | Unset, d.pop("status", UNSET))
        if status != "processed" and not isinstance(status, Unset):
            raise ValueError(f"status must match const 'processed', got '{status}'")

        file_object = cls(
            bytes_=bytes_,
            created_at=created_at,
            filename=filename,
            id=id,
            purpose=purpose,
            row_count=row_count,
            sha256=sha256,
            object_=object_,
            status=status,
        )

        file_object.additional_properties = d
        return file_object

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
