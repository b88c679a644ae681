# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PromptOutcome")


@_attrs_define
class PromptOutcome:
    """
    Attributes:
        mean_reward (float | None):
        passed (int): Samples whose reward is at least pass_threshold.
        row (int):
        signal (bool): Whether the rewards differ within the group (a GRPO gradient).
    """

    mean_reward: float | None
    passed: int
    row: int
    signal: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        mean_reward: float | None
        mean_reward = self.mean_reward

        passed = self.passed

        row = self.row

        signal = self.signal

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "mean_reward": mean_reward,
                "passed": passed,
                "row": row,
                "signal": signal,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_mean_reward(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        mean_reward = _parse_mean_reward(d.pop("mean_reward"))

        passed = d.pop("passed")

        row = d.pop("row")

        signal = d.pop("signal")

        prompt_outcome = cls(
            mean_reward=mean_reward,
            passed=passed,
            row=row,
            signal=signal,
        )

        prompt_outcome.additional_properties = d
        return prompt_outcome

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
