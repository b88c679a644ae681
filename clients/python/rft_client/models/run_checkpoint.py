# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RunCheckpoint")


@_attrs_define
class RunCheckpoint:
    """
    Attributes:
        created_at (int):
        id (str): This service's checkpoint id (ftckpt-…): a model name for /v1/chat/completions.
        kind (str): training (weights and optimizer: load_state) or sampler (a PEFT adapter).
        name (str):
        tinker_path (str): tinker://<run>/<weights|sampler_weights>/<name>, what the SDK names it.
        size_bytes (int | None | Unset):
    """

    created_at: int
    id: str
    kind: str
    name: str
    tinker_path: str
    size_bytes: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        id = self.id

        kind = self.kind

        name = self.name

        tinker_path = self.tinker_path

        size_bytes: int | None | Unset
        if isinstance(self.size_bytes, Unset):
            size_bytes = UNSET
        else:
            size_bytes = self.size_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "kind": kind,
                "name": name,
                "tinker_path": tinker_path,
            }
        )
        if size_bytes is not UNSET:
            field_dict["size_bytes"] = size_bytes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        kind = d.pop("kind")

        name = d.pop("name")

        tinker_path = d.pop("tinker_path")

        def _parse_size_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_bytes = _parse_size_bytes(d.pop("size_bytes", UNSET))

        run_checkpoint = cls(
            created_at=created_at,
            id=id,
            kind=kind,
            name=name,
            tinker_path=tinker_path,
            size_bytes=size_bytes,
        )

        run_checkpoint.additional_properties = d
        return run_checkpoint

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
