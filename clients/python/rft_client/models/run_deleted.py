# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RunDeleted")


@_attrs_define
class RunDeleted:
    """
    Attributes:
        run_id (str):
        deleted (bool | Unset):  Default: True.
        object_ (Literal['eval.run.deleted'] | Unset):  Default: 'eval.run.deleted'.
    """

    run_id: str
    deleted: bool | Unset = True
    object_: Literal["eval.run.deleted"] | Unset = "eval.run.deleted"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        run_id = self.run_id

        deleted = self.deleted

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "run_id": run_id,
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
        run_id = d.pop("run_id")

        deleted = d.pop("deleted", UNSET)

        object_ = cast(Literal["eval.run.deleted"] | Unset, d.pop("object", UNSET))
        if object_ != "eval.run.deleted" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'eval.run.deleted', got '{object_}'")

        run_deleted = cls(
            run_id=run_id,
            deleted=deleted,
            object_=object_,
        )

        run_deleted.additional_properties = d
        return run_deleted

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
