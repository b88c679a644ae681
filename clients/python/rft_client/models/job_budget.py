# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobBudget")


@_attrs_define
class JobBudget:
    """A job's budget: it pauses at a checkpoint when its cost reaches either cap (a warning at 80 %). Body of
    ``POST /v1/fine_tuning/jobs/{id}/budget`` too, which replaces it (both null: no budget).

        Attributes:
            max_cost (float | None | Unset): In the project's unit (GET /v1/billing: the currency, or device-hours
                unpriced).
            max_device_hours (float | None | Unset): Device-hours, whatever the prices.
    """

    max_cost: float | None | Unset = UNSET
    max_device_hours: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_cost: float | None | Unset
        if isinstance(self.max_cost, Unset):
            max_cost = UNSET
        else:
            max_cost = self.max_cost

        max_device_hours: float | None | Unset
        if isinstance(self.max_device_hours, Unset):
            max_device_hours = UNSET
        else:
            max_device_hours = self.max_device_hours

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost
        if max_device_hours is not UNSET:
            field_dict["max_device_hours"] = max_device_hours

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_max_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost = _parse_max_cost(d.pop("max_cost", UNSET))

        def _parse_max_device_hours(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_device_hours = _parse_max_device_hours(d.pop("max_device_hours", UNSET))

        job_budget = cls(
            max_cost=max_cost,
            max_device_hours=max_device_hours,
        )

        return job_budget
