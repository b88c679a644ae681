# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="GraderMetrics")


@_attrs_define
class GraderMetrics:
    """One reward column of the step (a grader, or a part of a ``multi`` grader as ``{name}.{part}``).

    Attributes:
        name (str):
        train_reward_mean (float | None): Mean score over the samples the grader applied to.
        error_rate (float | None | Unset): Share of samples whose scoring failed (scored 0); null for a multi grader's
            part.
        not_applicable_rate (float | None | Unset): Share of samples the grader returned None for.
        train_reward_std (float | None | Unset):
    """

    name: str
    train_reward_mean: float | None
    error_rate: float | None | Unset = UNSET
    not_applicable_rate: float | None | Unset = UNSET
    train_reward_std: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        train_reward_mean: float | None
        train_reward_mean = self.train_reward_mean

        error_rate: float | None | Unset
        if isinstance(self.error_rate, Unset):
            error_rate = UNSET
        else:
            error_rate = self.error_rate

        not_applicable_rate: float | None | Unset
        if isinstance(self.not_applicable_rate, Unset):
            not_applicable_rate = UNSET
        else:
            not_applicable_rate = self.not_applicable_rate

        train_reward_std: float | None | Unset
        if isinstance(self.train_reward_std, Unset):
            train_reward_std = UNSET
        else:
            train_reward_std = self.train_reward_std

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "train_reward_mean": train_reward_mean,
            }
        )
        if error_rate is not UNSET:
            field_dict["error_rate"] = error_rate
        if not_applicable_rate is not UNSET:
            field_dict["not_applicable_rate"] = not_applicable_rate
        if train_reward_std is not UNSET:
            field_dict["train_reward_std"] = train_reward_std

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_train_reward_mean(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        train_reward_mean = _parse_train_reward_mean(d.pop("train_reward_mean"))

        def _parse_error_rate(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        error_rate = _parse_error_rate(d.pop("error_rate", UNSET))

        def _parse_not_applicable_rate(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        not_applicable_rate = _parse_not_applicable_rate(d.pop("not_applicable_rate", UNSET))

        def _parse_train_reward_std(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        train_reward_std = _parse_train_reward_std(d.pop("train_reward_std", UNSET))

        grader_metrics = cls(
            name=name,
            train_reward_mean=train_reward_mean,
            error_rate=error_rate,
            not_applicable_rate=not_applicable_rate,
            train_reward_std=train_reward_std,
        )

        grader_metrics.additional_properties = d
        return grader_metrics

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
