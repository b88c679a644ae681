# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ModelRegister")


@_attrs_define
class ModelRegister:
    """``POST /v1/admin/models``: register a base model from a source the API process can read.

    Attributes:
        source (str): A folder on the API's machine, s3://bucket/prefix/, or hf://org/name[@revision] (resolved from the
            API machine's offline huggingface_hub cache; never downloaded).
        hub_id (None | str | Unset): org/name: what trained adapters name as base.
        id (None | str | Unset): The model's id (default: the folder or hub name).
    """

    source: str
    hub_id: None | str | Unset = UNSET
    id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        hub_id: None | str | Unset
        if isinstance(self.hub_id, Unset):
            hub_id = UNSET
        else:
            hub_id = self.hub_id

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "source": source,
            }
        )
        if hub_id is not UNSET:
            field_dict["hub_id"] = hub_id
        if id is not UNSET:
            field_dict["id"] = id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        def _parse_hub_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        hub_id = _parse_hub_id(d.pop("hub_id", UNSET))

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        model_register = cls(
            source=source,
            hub_id=hub_id,
            id=id,
        )

        model_register.additional_properties = d
        return model_register

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
