# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.price_sheet import PriceSheet


T = TypeVar("T", bound="BillingUpdate")


@_attrs_define
class BillingUpdate:
    """Body of ``POST /v1/admin/projects/{id}/billing``: what to change (a field left out stays as it is).

    Attributes:
        clear_monthly_budget (bool | Unset): No monthly budget. Default: False.
        clear_prices (bool | Unset): Back to the service's prices. Default: False.
        monthly_budget (float | None | Unset): The project's budget for a UTC calendar month.
        prices (None | PriceSheet | Unset): The project's own prices (replaces the previous sheet).
    """

    clear_monthly_budget: bool | Unset = False
    clear_prices: bool | Unset = False
    monthly_budget: float | None | Unset = UNSET
    prices: None | PriceSheet | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.price_sheet import PriceSheet  # noqa: PLC0415

        clear_monthly_budget = self.clear_monthly_budget

        clear_prices = self.clear_prices

        monthly_budget: float | None | Unset
        if isinstance(self.monthly_budget, Unset):
            monthly_budget = UNSET
        else:
            monthly_budget = self.monthly_budget

        prices: dict[str, Any] | None | Unset
        if isinstance(self.prices, Unset):
            prices = UNSET
        elif isinstance(self.prices, PriceSheet):
            prices = self.prices.to_dict()
        else:
            prices = self.prices

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if clear_monthly_budget is not UNSET:
            field_dict["clear_monthly_budget"] = clear_monthly_budget
        if clear_prices is not UNSET:
            field_dict["clear_prices"] = clear_prices
        if monthly_budget is not UNSET:
            field_dict["monthly_budget"] = monthly_budget
        if prices is not UNSET:
            field_dict["prices"] = prices

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.price_sheet import PriceSheet  # noqa: PLC0415

        d = dict(src_dict)
        clear_monthly_budget = d.pop("clear_monthly_budget", UNSET)

        clear_prices = d.pop("clear_prices", UNSET)

        def _parse_monthly_budget(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        monthly_budget = _parse_monthly_budget(d.pop("monthly_budget", UNSET))

        def _parse_prices(data: object) -> None | PriceSheet | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                prices_type_0 = PriceSheet.from_dict(data)

                return prices_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PriceSheet | Unset, data)

        prices = _parse_prices(d.pop("prices", UNSET))

        billing_update = cls(
            clear_monthly_budget=clear_monthly_budget,
            clear_prices=clear_prices,
            monthly_budget=monthly_budget,
            prices=prices,
        )

        return billing_update
