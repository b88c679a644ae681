# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="StepTiming")


@_attrs_define
class StepTiming:
    """Seconds of wall-clock time.

    Attributes:
        full_iteration (float):
        sampling (float):
        scoring (float):
        training (float): Policy update, engine sync included.
        eval_ (float | None | Unset): Validation, on the steps that ran it.
        waiting (float | None | Unset): max_staleness > 0: seconds the trainer waited for this step's batch (sampling
            and scoring ran beside the previous update; their seconds are the sampler's own).
    """

    full_iteration: float
    sampling: float
    scoring: float
    training: float
    eval_: float | None | Unset = UNSET
    waiting: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        full_iteration = self.full_iteration

        sampling = self.sampling

        scoring = self.scoring

        training = self.training

        eval_: float | None | Unset
        if isinstance(self.eval_, Unset):
            eval_ = UNSET
        else:
            eval_ = self.eval_

        waiting: float | None | Unset
        if isinstance(self.waiting, Unset):
            waiting = UNSET
        else:
            waiting = self.waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "full_iteration": full_iteration,
                "sampling": sampling,
                "scoring": scoring,
                "training": training,
            }
        )
        if eval_ is not UNSET:
            field_dict["eval"] = eval_
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        full_iteration = d.pop("full_iteration")

        sampling = d.pop("sampling")

        scoring = d.pop("scoring")

        training = d.pop("training")

        def _parse_eval_(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        eval_ = _parse_eval_(d.pop("eval", UNSET))

        def _parse_waiting(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        waiting = _parse_waiting(d.pop("waiting", UNSET))

        step_timing = cls(
            full_iteration=full_iteration,
            sampling=sampling,
            scoring=scoring,
            training=training,
            eval_=eval_,
            waiting=waiting,
        )

        step_timing.additional_properties = d
        return step_timing

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
