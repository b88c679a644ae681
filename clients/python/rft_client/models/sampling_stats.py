# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SamplingStats")


@_attrs_define
class SamplingStats:
    """Dynamic sampling and GFPO bookkeeping: how many groups were sampled, dropped for no signal, trained on.

    Attributes:
        groups_dropped (int):
        groups_sampled (int):
        groups_trained (int):
        sampling_rounds (int):
    """

    groups_dropped: int
    groups_sampled: int
    groups_trained: int
    sampling_rounds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        groups_dropped = self.groups_dropped

        groups_sampled = self.groups_sampled

        groups_trained = self.groups_trained

        sampling_rounds = self.sampling_rounds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "groups_dropped": groups_dropped,
                "groups_sampled": groups_sampled,
                "groups_trained": groups_trained,
                "sampling_rounds": sampling_rounds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        groups_dropped = d.pop("groups_dropped")

        groups_sampled = d.pop("groups_sampled")

        groups_trained = d.pop("groups_trained")

        sampling_rounds = d.pop("sampling_rounds")

        sampling_stats = cls(
            groups_dropped=groups_dropped,
            groups_sampled=groups_sampled,
            groups_trained=groups_trained,
            sampling_rounds=sampling_rounds,
        )

        sampling_stats.additional_properties = d
        return sampling_stats

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
