# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.report_metrics_metrics import ReportMetricsMetrics


T = TypeVar("T", bound="ReportMetrics")


@_attrs_define
class ReportMetrics:
    """Metrics of one step of your loop that the service cannot see (a reward, an accuracy), drawn beside the loss.
    A step reported again merges its new values over the old.

        Attributes:
            metrics (ReportMetricsMetrics): Finite numbers by name, at most 64 a step.
            step (int): The optimizer step they belong to (1 = after the first optim_step).
    """

    metrics: ReportMetricsMetrics
    step: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        metrics = self.metrics.to_dict()

        step = self.step

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "metrics": metrics,
                "step": step,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.report_metrics_metrics import ReportMetricsMetrics  # noqa: PLC0415

        d = dict(src_dict)
        metrics = ReportMetricsMetrics.from_dict(d.pop("metrics"))

        step = d.pop("step")

        report_metrics = cls(
            metrics=metrics,
            step=step,
        )

        report_metrics.additional_properties = d
        return report_metrics

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
