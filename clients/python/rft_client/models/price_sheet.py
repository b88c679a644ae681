# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.price_sheet_device_hour import PriceSheetDeviceHour


T = TypeVar("T", bound="PriceSheet")


@_attrs_define
class PriceSheet:
    """A project's own prices over the service's (each field left out: the service's).

    Attributes:
        device_hour (PriceSheetDeviceHour | Unset): Price of a device-hour by device kind ('H100', 'cpu', 'default'); a
            kind named here takes this price, the others the service's.
        discount (float | Unset): Taken off every cost: 0.2 is 20 % off, 1 a free project. Default: 0.0.
        inference_per_million_tokens (float | None | Unset): Price of a million inference tokens.
    """

    device_hour: PriceSheetDeviceHour | Unset = UNSET
    discount: float | Unset = 0.0
    inference_per_million_tokens: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        device_hour: dict[str, Any] | Unset = UNSET
        if not isinstance(self.device_hour, Unset):
            device_hour = self.device_hour.to_dict()

        discount = self.discount

        inference_per_million_tokens: float | None | Unset
        if isinstance(self.inference_per_million_tokens, Unset):
            inference_per_million_tokens = UNSET
        else:
            inference_per_million_tokens = self.inference_per_million_tokens

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if device_hour is not UNSET:
            field_dict["device_hour"] = device_hour
        if discount is not UNSET:
            field_dict["discount"] = discount
        if inference_per_million_tokens is not UNSET:
            field_dict["inference_per_million_tokens"] = inference_per_million_tokens

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.price_sheet_device_hour import PriceSheetDeviceHour  # noqa: PLC0415

        d = dict(src_dict)
        _device_hour = d.pop("device_hour", UNSET)
        device_hour: PriceSheetDeviceHour | Unset
        if isinstance(_device_hour, Unset):
            device_hour = UNSET
        else:
            device_hour = PriceSheetDeviceHour.from_dict(_device_hour)

        discount = d.pop("discount", UNSET)

        def _parse_inference_per_million_tokens(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        inference_per_million_tokens = _parse_inference_per_million_tokens(d.pop("inference_per_million_tokens", UNSET))

        price_sheet = cls(
            device_hour=device_hour,
            discount=discount,
            inference_per_million_tokens=inference_per_million_tokens,
        )

        return price_sheet
