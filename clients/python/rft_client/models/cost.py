# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Cost")


@_attrs_define
class Cost:
    """What something cost, from its usage records at the prices in force.

    Attributes:
        amount (float): In ``unit``: the currency's units, or device-hours where no price is set.
        device_hours (float): Devices × hours, every device kind together.
        unit (str): The operator's currency (PRICE_CURRENCY, e.g. USD), or 'device_hour'.
    """

    amount: float
    device_hours: float
    unit: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        amount = self.amount

        device_hours = self.device_hours

        unit = self.unit

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "amount": amount,
                "device_hours": device_hours,
                "unit": unit,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        amount = d.pop("amount")

        device_hours = d.pop("device_hours")

        unit = d.pop("unit")

        cost = cls(
            amount=amount,
            device_hours=device_hours,
            unit=unit,
        )

        cost.additional_properties = d
        return cost

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
