# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_estimate_confidence import JobEstimateConfidence, check_job_estimate_confidence
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.estimate_drivers import EstimateDrivers
    from ..models.span import Span


T = TypeVar("T", bound="JobEstimate")


@_attrs_define
class JobEstimate:
    """``POST /v1/fine_tuning/jobs/estimate``: what a job will take and cost, before it runs.

    Attributes:
        basis (str): In words: what it was calibrated from, and how far off that calibration was.
        confidence (JobEstimateConfidence): high: calibrated from 3 or more finished jobs of this model on this device
            kind; medium: from 1 or 2, or from other models on it; low: no history (a stated fallback from the model's
            size).
        cost (Span): An expected figure and the range it is likely in.
        device_hours (Span): An expected figure and the range it is likely in.
        device_kind (str): The device kind the estimate is for: what a worker would give the job.
        device_seconds (Span): An expected figure and the range it is likely in.
        drivers (EstimateDrivers): What the estimate is made of: the job's shape and the rates measured on this device
            kind.
        model (str):
        step_seconds (Span): An expected figure and the range it is likely in.
        unit (str): The project's unit: the currency, or 'device_hour' where nothing is priced.
        object_ (Literal['fine_tuning.job.estimate'] | Unset):  Default: 'fine_tuning.job.estimate'.
    """

    basis: str
    confidence: JobEstimateConfidence
    cost: Span
    device_hours: Span
    device_kind: str
    device_seconds: Span
    drivers: EstimateDrivers
    model: str
    step_seconds: Span
    unit: str
    object_: Literal["fine_tuning.job.estimate"] | Unset = "fine_tuning.job.estimate"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        basis = self.basis

        confidence: str = self.confidence

        cost = self.cost.to_dict()

        device_hours = self.device_hours.to_dict()

        device_kind = self.device_kind

        device_seconds = self.device_seconds.to_dict()

        drivers = self.drivers.to_dict()

        model = self.model

        step_seconds = self.step_seconds.to_dict()

        unit = self.unit

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "basis": basis,
                "confidence": confidence,
                "cost": cost,
                "device_hours": device_hours,
                "device_kind": device_kind,
                "device_seconds": device_seconds,
                "drivers": drivers,
                "model": model,
                "step_seconds": step_seconds,
                "unit": unit,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.estimate_drivers import EstimateDrivers  # noqa: PLC0415
        from ..models.span import Span  # noqa: PLC0415

        d = dict(src_dict)
        basis = d.pop("basis")

        confidence = check_job_estimate_confidence(d.pop("confidence"))

        cost = Span.from_dict(d.pop("cost"))

        device_hours = Span.from_dict(d.pop("device_hours"))

        device_kind = d.pop("device_kind")

        device_seconds = Span.from_dict(d.pop("device_seconds"))

        drivers = EstimateDrivers.from_dict(d.pop("drivers"))

        model = d.pop("model")

        step_seconds = Span.from_dict(d.pop("step_seconds"))

        unit = d.pop("unit")

        object_ = cast(Literal["fine_tuning.job.estimate"] | Unset, d.pop("object", UNSET))
        if object_ != "fine_tuning.job.estimate" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'fine_tuning.job.estimate', got '{object_}'")

        job_estimate = cls(
            basis=basis,
            confidence=confidence,
            cost=cost,
            device_hours=device_hours,
            device_kind=device_kind,
            device_seconds=device_seconds,
            drivers=drivers,
            model=model,
            step_seconds=step_seconds,
            unit=unit,
            object_=object_,
        )

        job_estimate.additional_properties = d
        return job_estimate

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
