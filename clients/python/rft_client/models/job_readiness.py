# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.readiness_comparison import ReadinessComparison
    from ..models.readiness_report import ReadinessReport


T = TypeVar("T", bound="JobReadiness")


@_attrs_define
class JobReadiness:
    """``GET /v1/fine_tuning/jobs/{id}/readiness``: will GRPO learn on this task with this model, and did it?

    Attributes:
        job_id (str):
        requested (bool): Whether the job asked for a probe (hyperparameters.preflight).
        after (None | ReadinessReport | Unset): The trained adapter, on the same prompts.
        before (None | ReadinessReport | Unset): The base model, probed before training.
        comparison (None | ReadinessComparison | Unset): Before and after, per prompt.
        dropped_rows (list[int] | Unset): Training rows left out for lack of signal (drop_zero_variance_prompts).
        object_ (Literal['fine_tuning.job.readiness'] | Unset):  Default: 'fine_tuning.job.readiness'.
    """

    job_id: str
    requested: bool
    after: None | ReadinessReport | Unset = UNSET
    before: None | ReadinessReport | Unset = UNSET
    comparison: None | ReadinessComparison | Unset = UNSET
    dropped_rows: list[int] | Unset = UNSET
    object_: Literal["fine_tuning.job.readiness"] | Unset = "fine_tuning.job.readiness"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.readiness_comparison import ReadinessComparison  # noqa: PLC0415
        from ..models.readiness_report import ReadinessReport  # noqa: PLC0415

        job_id = self.job_id

        requested = self.requested

        after: dict[str, Any] | None | Unset
        if isinstance(self.after, Unset):
            after = UNSET
        elif isinstance(self.after, ReadinessReport):
            after = self.after.to_dict()
        else:
            after = self.after

        before: dict[str, Any] | None | Unset
        if isinstance(self.before, Unset):
            before = UNSET
        elif isinstance(self.before, ReadinessReport):
            before = self.before.to_dict()
        else:
            before = self.before

        comparison: dict[str, Any] | None | Unset
        if isinstance(self.comparison, Unset):
            comparison = UNSET
        elif isinstance(self.comparison, ReadinessComparison):
            comparison = self.comparison.to_dict()
        else:
            comparison = self.comparison

        dropped_rows: list[int] | Unset = UNSET
        if not isinstance(self.dropped_rows, Unset):
            dropped_rows = self.dropped_rows

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "requested": requested,
            }
        )
        if after is not UNSET:
            field_dict["after"] = after
        if before is not UNSET:
            field_dict["before"] = before
        if comparison is not UNSET:
            field_dict["comparison"] = comparison
        if dropped_rows is not UNSET:
            field_dict["dropped_rows"] = dropped_rows
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.readiness_comparison import ReadinessComparison  # noqa: PLC0415
        from ..models.readiness_report import ReadinessReport  # noqa: PLC0415

        d = dict(src_dict)
        job_id = d.pop("job_id")

        requested = d.pop("requested")

        def _parse_after(data: object) -> None | ReadinessReport | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                after_type_0 = ReadinessReport.from_dict(data)

                return after_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReadinessReport | Unset, data)

        after = _parse_after(d.pop("after", UNSET))

        def _parse_before(data: object) -> None | ReadinessReport | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                before_type_0 = ReadinessReport.from_dict(data)

                return before_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReadinessReport | Unset, data)

        before = _parse_before(d.pop("before", UNSET))

        def _parse_comparison(data: object) -> None | ReadinessComparison | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                comparison_type_0 = ReadinessComparison.from_dict(data)

                return comparison_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReadinessComparison | Unset, data)

        comparison = _parse_comparison(d.pop("comparison", UNSET))

        dropped_rows = cast(list[int], d.pop("dropped_rows", UNSET))

        object_ = cast(Literal["fine_tuning.job.readiness"] | Unset, d.pop("object", UNSET))
        if object_ != "fine_tuning.job.readiness" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'fine_tuning.job.readiness', got '{object_}'")

        job_readiness = cls(
            job_id=job_id,
            requested=requested,
            after=after,
            before=before,
            comparison=comparison,
            dropped_rows=dropped_rows,
            object_=object_,
        )

        job_readiness.additional_properties = d
        return job_readiness

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
