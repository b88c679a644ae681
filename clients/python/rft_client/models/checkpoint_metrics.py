# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CheckpointMetrics")


@_attrs_define
class CheckpointMetrics:
    """The step a checkpoint was saved at, in brief (a pause before any step saves none of these).

    Attributes:
        completion_length_mean (float | None | Unset):
        kl (float | None | Unset):
        loss (float | None | Unset):
        step (int | None | Unset):
        train_reward_mean (float | None | Unset):
        valid_reward_mean (float | None | Unset): Set when the step ran validation.
    """

    completion_length_mean: float | None | Unset = UNSET
    kl: float | None | Unset = UNSET
    loss: float | None | Unset = UNSET
    step: int | None | Unset = UNSET
    train_reward_mean: float | None | Unset = UNSET
    valid_reward_mean: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        completion_length_mean: float | None | Unset
        if isinstance(self.completion_length_mean, Unset):
            completion_length_mean = UNSET
        else:
            completion_length_mean = self.completion_length_mean

        kl: float | None | Unset
        if isinstance(self.kl, Unset):
            kl = UNSET
        else:
            kl = self.kl

        loss: float | None | Unset
        if isinstance(self.loss, Unset):
            loss = UNSET
        else:
            loss = self.loss

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        train_reward_mean: float | None | Unset
        if isinstance(self.train_reward_mean, Unset):
            train_reward_mean = UNSET
        else:
            train_reward_mean = self.train_reward_mean

        valid_reward_mean: float | None | Unset
        if isinstance(self.valid_reward_mean, Unset):
            valid_reward_mean = UNSET
        else:
            valid_reward_mean = self.valid_reward_mean

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if completion_length_mean is not UNSET:
            field_dict["completion_length_mean"] = completion_length_mean
        if kl is not UNSET:
            field_dict["kl"] = kl
        if loss is not UNSET:
            field_dict["loss"] = loss
        if step is not UNSET:
            field_dict["step"] = step
        if train_reward_mean is not UNSET:
            field_dict["train_reward_mean"] = train_reward_mean
        if valid_reward_mean is not UNSET:
            field_dict["valid_reward_mean"] = valid_reward_mean

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_completion_length_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        completion_length_mean = _parse_completion_length_mean(d.pop("completion_length_mean", UNSET))

        def _parse_kl(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        kl = _parse_kl(d.pop("kl", UNSET))

        def _parse_loss(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        loss = _parse_loss(d.pop("loss", UNSET))

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        def _parse_train_reward_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        train_reward_mean = _parse_train_reward_mean(d.pop("train_reward_mean", UNSET))

        def _parse_valid_reward_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        valid_reward_mean = _parse_valid_reward_mean(d.pop("valid_reward_mean", UNSET))

        checkpoint_metrics = cls(
            completion_length_mean=completion_length_mean,
            kl=kl,
            loss=loss,
            step=step,
            train_reward_mean=train_reward_mean,
            valid_reward_mean=valid_reward_mean,
        )

        checkpoint_metrics.additional_properties = d
        return checkpoint_metrics

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
