# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cost import Cost
    from ..models.step_metrics import StepMetrics


T = TypeVar("T", bound="MetricsPoint")


@_attrs_define
class MetricsPoint:
    """One step of the metric series (``GET …/metrics``): its metrics without the rollouts (``samples`` is empty;
    ``GET …/samples?step=N`` has them).

        Attributes:
            created_at (int):
            metrics (StepMetrics): One optimizer step. ``kl`` is null when β = 0; per-token means are over the tokens that
                were updated.
            step (int):
            cost (Cost | None | Unset): The job's cost when the step was recorded (its running cost).
            object_ (Literal['fine_tuning.job.metrics'] | Unset):  Default: 'fine_tuning.job.metrics'.
            reward_gain (float | None | Unset): A validation step: its validation reward less the base model's (step 1's
                train reward, sampled before any update).
            reward_gain_per_cost (float | None | Unset): reward_gain per unit of cost (cost.unit: the currency, or device-
                hours): what it bought.
    """

    created_at: int
    metrics: StepMetrics
    step: int
    cost: Cost | None | Unset = UNSET
    object_: Literal["fine_tuning.job.metrics"] | Unset = "fine_tuning.job.metrics"
    reward_gain: float | None | Unset = UNSET
    reward_gain_per_cost: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.cost import Cost  # noqa: PLC0415

        created_at = self.created_at

        metrics = self.metrics.to_dict()

        step = self.step

        cost: dict[str, Any] | None | Unset
        if isinstance(self.cost, Unset):
            cost = UNSET
        elif isinstance(self.cost, Cost):
            cost = self.cost.to_dict()
        else:
            cost = self.cost

        object_ = self.object_

        reward_gain: float | None | Unset
        if isinstance(self.reward_gain, Unset):
            reward_gain = UNSET
        else:
            reward_gain = self.reward_gain

        reward_gain_per_cost: float | None | Unset
        if isinstance(self.reward_gain_per_cost, Unset):
            reward_gain_per_cost = UNSET
        else:
            reward_gain_per_cost = self.reward_gain_per_cost

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "metrics": metrics,
                "step": step,
            }
        )
        if cost is not UNSET:
            field_dict["cost"] = cost
        if object_ is not UNSET:
            field_dict["object"] = object_
        if reward_gain is not UNSET:
            field_dict["reward_gain"] = reward_gain
        if reward_gain_per_cost is not UNSET:
            field_dict["reward_gain_per_cost"] = reward_gain_per_cost

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cost import Cost  # noqa: PLC0415
        from ..models.step_metrics import StepMetrics  # noqa: PLC0415

        d = dict(src_dict)
        created_at = d.pop("created_at")

        metrics = StepMetrics.from_dict(d.pop("metrics"))

        step = d.pop("step")

        def _parse_cost(data: object) -> Cost | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                cost_type_0 = Cost.from_dict(data)

                return cost_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Cost | None | Unset, data)

        cost = _parse_cost(d.pop("cost", UNSET))

        object_ = cast(Literal["fine_tuning.job.metrics"] | Unset, d.pop("object", UNSET))
        if object_ != "fine_tuning.job.metrics" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'fine_tuning.job.metrics', got '{object_}'")

        def _parse_reward_gain(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        reward_gain = _parse_reward_gain(d.pop("reward_gain", UNSET))

        def _parse_reward_gain_per_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        reward_gain_per_cost = _parse_reward_gain_per_cost(d.pop("reward_gain_per_cost", UNSET))

        metrics_point = cls(
            created_at=created_at,
            metrics=metrics,
            step=step,
            cost=cost,
            object_=object_,
            reward_gain=reward_gain,
            reward_gain_per_cost=reward_gain_per_cost,
        )

        metrics_point.additional_properties = d
        return metrics_point

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
