# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cost import Cost
    from ..models.project_billing_device_hour import ProjectBillingDeviceHour


T = TypeVar("T", bound="ProjectBilling")


@_attrs_define
class ProjectBilling:
    """A project's prices, budget and spending this month (``GET /v1/billing``, ``/v1/admin/projects/{id}/billing``).

    Attributes:
        device_hour (ProjectBillingDeviceHour): Device-hour prices in force, the project's over the service's.
        discount (float):
        inference_per_million_tokens (float):
        month (str): The month spent so far: UTC YYYY-MM.
        monthly_budget (float | None): The project's budget for a UTC calendar month; null: none.
        over_budget (bool): New jobs, resumes and training-API calls are refused while true.
        project_id (str):
        spent_this_month (Cost): What something cost, from its usage records at the prices in force.
        unit (str): What costs and budgets are counted in: the currency, or 'device_hour'.
        object_ (Literal['billing'] | Unset):  Default: 'billing'.
    """

    device_hour: ProjectBillingDeviceHour
    discount: float
    inference_per_million_tokens: float
    month: str
    monthly_budget: float | None
    over_budget: bool
    project_id: str
    spent_this_month: Cost
    unit: str
    object_: Literal["billing"] | Unset = "billing"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        device_hour = self.device_hour.to_dict()

        discount = self.discount

        inference_per_million_tokens = self.inference_per_million_tokens

        month = self.month

        monthly_budget: float | None
        monthly_budget = self.monthly_budget

        over_budget = self.over_budget

        project_id = self.project_id

        spent_this_month = self.spent_this_month.to_dict()

        unit = self.unit

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "device_hour": device_hour,
                "discount": discount,
                "inference_per_million_tokens": inference_per_million_tokens,
                "month": month,
                "monthly_budget": monthly_budget,
                "over_budget": over_budget,
                "project_id": project_id,
                "spent_this_month": spent_this_month,
                "unit": unit,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cost import Cost  # noqa: PLC0415
        from ..models.project_billing_device_hour import ProjectBillingDeviceHour  # noqa: PLC0415

        d = dict(src_dict)
        device_hour = ProjectBillingDeviceHour.from_dict(d.pop("device_hour"))

        discount = d.pop("discount")

        inference_per_million_tokens = d.pop("inference_per_million_tokens")

        month = d.pop("month")

        def _parse_monthly_budget(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        monthly_budget = _parse_monthly_budget(d.pop("monthly_budget"))

        over_budget = d.pop("over_budget")

        project_id = d.pop("project_id")

        spent_this_month = Cost.from_dict(d.pop("spent_this_month"))

        unit = d.pop("unit")

        object_ = cast(Literal["billing"] | Unset, d.pop("object", UNSET))
        if object_ != "billing" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'billing', got '{object_}'")

        project_billing = cls(
            device_hour=device_hour,
            discount=discount,
            inference_per_million_tokens=inference_per_million_tokens,
            month=month,
            monthly_budget=monthly_budget,
            over_budget=over_budget,
            project_id=project_id,
            spent_this_month=spent_this_month,
            unit=unit,
            object_=object_,
        )

        project_billing.additional_properties = d
        return project_billing

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
