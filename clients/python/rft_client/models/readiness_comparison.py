# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReadinessComparison")


@_attrs_define
class ReadinessComparison:
    """The probe of the trained model beside the base model's, prompt by prompt (same prompts, same k).

    Attributes:
        broken (list[int]): Rows that flipped from passing to failing.
        fixed (list[int]): Rows that flipped from failing to passing (solved after, not before).
        mean_reward_after (float | None):
        mean_reward_before (float | None):
        prompts (int):
        solved_after (int):
        solved_before (int): Prompts with at least half their samples passing, before.
        summary (str):
    """

    broken: list[int]
    fixed: list[int]
    mean_reward_after: float | None
    mean_reward_before: float | None
    prompts: int
    solved_after: int
    solved_before: int
    summary: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        broken = self.broken

        fixed = self.fixed

        mean_reward_after: float | None
        mean_reward_after = self.mean_reward_after

        mean_reward_before: float | None
        mean_reward_before = self.mean_reward_before

        prompts = self.prompts

        solved_after = self.solved_after

        solved_before = self.solved_before

        summary = self.summary

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "broken": broken,
                "fixed": fixed,
                "mean_reward_after": mean_reward_after,
                "mean_reward_before": mean_reward_before,
                "prompts": prompts,
                "solved_after": solved_after,
                "solved_before": solved_before,
                "summary": summary,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        broken = cast(list[int], d.pop("broken"))

        fixed = cast(list[int], d.pop("fixed"))

        def _parse_mean_reward_after(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        mean_reward_after = _parse_mean_reward_after(d.pop("mean_reward_after"))

        def _parse_mean_reward_before(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        mean_reward_before = _parse_mean_reward_before(d.pop("mean_reward_before"))

        prompts = d.pop("prompts")

        solved_after = d.pop("solved_after")

        solved_before = d.pop("solved_before")

        summary = d.pop("summary")

        readiness_comparison = cls(
            broken=broken,
            fixed=fixed,
            mean_reward_after=mean_reward_after,
            mean_reward_before=mean_reward_before,
            prompts=prompts,
            solved_after=solved_after,
            solved_before=solved_before,
            summary=summary,
        )

        readiness_comparison.additional_properties = d
        return readiness_comparison

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
