# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.grader_metrics import GraderMetrics


T = TypeVar("T", bound="Scores")


@_attrs_define
class Scores:
    """
    Attributes:
        train_reward_mean (float | None): Mean total reward (weighted grader sum, shaping included) over scorable
            samples; null when no sample of the step could be scored.
        graders (list[GraderMetrics] | Unset):
        valid_pass_at_k (float | None | Unset): Validation: mean over prompts of the best of eval_samples rewards
            (pass@k for 0/1).
        valid_reward_mean (float | None | Unset): Validation: mean weighted reward (every eval_interval steps and after
            the last).
        valid_reward_stderr (float | None | Unset): Validation: standard error of valid_reward_mean over the prompts
            (each the mean of its eval_samples rewards); a change between evaluations smaller than this is noise.
    """

    train_reward_mean: float | None
    graders: list[GraderMetrics] | Unset = UNSET
    valid_pass_at_k: float | None | Unset = UNSET
    valid_reward_mean: float | None | Unset = UNSET
    valid_reward_stderr: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        train_reward_mean: float | None
        train_reward_mean = self.train_reward_mean

        graders: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.graders, Unset):
            graders = []
            for graders_item_data in self.graders:
                graders_item = graders_item_data.to_dict()
                graders.append(graders_item)

        valid_pass_at_k: float | None | Unset
        if isinstance(self.valid_pass_at_k, Unset):
            valid_pass_at_k = UNSET
        else:
            valid_pass_at_k = self.valid_pass_at_k

        valid_reward_mean: float | None | Unset
        if isinstance(self.valid_reward_mean, Unset):
            valid_reward_mean = UNSET
        else:
            valid_reward_mean = self.valid_reward_mean

        valid_reward_stderr: float | None | Unset
        if isinstance(self.valid_reward_stderr, Unset):
            valid_reward_stderr = UNSET
        else:
            valid_reward_stderr = self.valid_reward_stderr

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "train_reward_mean": train_reward_mean,
            }
        )
        if graders is not UNSET:
            field_dict["graders"] = graders
        if valid_pass_at_k is not UNSET:
            field_dict["valid_pass_at_k"] = valid_pass_at_k
        if valid_reward_mean is not UNSET:
            field_dict["valid_reward_mean"] = valid_reward_mean
        if valid_reward_stderr is not UNSET:
            field_dict["valid_reward_stderr"] = valid_reward_stderr

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.grader_metrics import GraderMetrics  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_train_reward_mean(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        train_reward_mean = _parse_train_reward_mean(d.pop("train_reward_mean"))

        _graders = d.pop("graders", UNSET)
        graders: list[GraderMetrics] | Unset = UNSET
        if _graders is not UNSET:
            graders = []
            for graders_item_data in _graders:
                graders_item = GraderMetrics.from_dict(graders_item_data)

                graders.append(graders_item)

        def _parse_valid_pass_at_k(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        valid_pass_at_k = _parse_valid_pass_at_k(d.pop("valid_pass_at_k", UNSET))

        def _parse_valid_reward_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        valid_reward_mean = _parse_valid_reward_mean(d.pop("valid_reward_mean", UNSET))

        def _parse_valid_reward_stderr(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        valid_reward_stderr = _parse_valid_reward_stderr(d.pop("valid_reward_stderr", UNSET))

        scores = cls(
            train_reward_mean=train_reward_mean,
            graders=graders,
            valid_pass_at_k=valid_pass_at_k,
            valid_reward_mean=valid_reward_mean,
            valid_reward_stderr=valid_reward_stderr,
        )

        scores.additional_properties = d
        return scores

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
