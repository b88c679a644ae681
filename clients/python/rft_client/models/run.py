# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.run_status import RunStatus, check_run_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.criterion_counts import CriterionCounts
    from ..models.eval_error import EvalError
    from ..models.result_counts import ResultCounts
    from ..models.run_data_source import RunDataSource
    from ..models.run_metadata_type_0 import RunMetadataType0
    from ..models.run_per_model_usage_item import RunPerModelUsageItem


T = TypeVar("T", bound="Run")


@_attrs_define
class Run:
    """
    Attributes:
        created_at (int):
        data_source (RunDataSource):
        error (EvalError | None):
        eval_id (str):
        id (str):
        metadata (None | RunMetadataType0):
        model (str):
        name (None | str):
        per_model_usage (list[RunPerModelUsageItem]):
        per_testing_criteria_results (list[CriterionCounts]):
        report_url (str):
        result_counts (ResultCounts):
        status (RunStatus):
        object_ (Literal['eval.run'] | Unset):  Default: 'eval.run'.
    """

    created_at: int
    data_source: RunDataSource
    error: EvalError | None
    eval_id: str
    id: str
    metadata: None | RunMetadataType0
    model: str
    name: None | str
    per_model_usage: list[RunPerModelUsageItem]
    per_testing_criteria_results: list[CriterionCounts]
    report_url: str
    result_counts: ResultCounts
    status: RunStatus
    object_: Literal["eval.run"] | Unset = "eval.run"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.eval_error import EvalError  # noqa: PLC0415
        from ..models.run_metadata_type_0 import RunMetadataType0  # noqa: PLC0415

        created_at = self.created_at

        data_source = self.data_source.to_dict()

        error: dict[str, Any] | None
        if isinstance(self.error, EvalError):
            error = self.error.to_dict()
        else:
            error = self.error

        eval_id = self.eval_id

        id = self.id

        metadata: dict[str, Any] | None
        if isinstance(self.metadata, RunMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        model = self.model

        name: None | str
        name = self.name

        per_model_usage = []
        for per_model_usage_item_data in self.per_model_usage:
            per_model_usage_item = per_model_usage_item_data.to_dict()
            per_model_usage.append(per_model_usage_item)

        per_testing_criteria_results = []
        for per_testing_criteria_results_item_data in self.per_testing_criteria_results:
            per_testing_criteria_results_item = per_testing_criteria_results_item_data.to_dict()
            per_testing_criteria_results.append(per_testing_criteria_results_item)

        report_url = self.report_url

        result_counts = self.result_counts.to_dict()

        status: str = self.status

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "data_source": data_source,
                "error": error,
                "eval_id": eval_id,
                "id": id,
                "metadata": metadata,
                "model": model,
                "name": name,
                "per_model_usage": per_model_usage,
                "per_testing_criteria_results": per_testing_criteria_results,
                "report_url": report_url,
                "result_counts": result_counts,
                "status": status,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.criterion_counts import CriterionCounts  # noqa: PLC0415
        from ..models.eval_error import EvalError  # noqa: PLC0415
        from ..models.result_counts import ResultCounts  # noqa: PLC0415
        from ..models.run_data_source import RunDataSource  # noqa: PLC0415
        from ..models.run_metadata_type_0 import RunMetadataType0  # noqa: PLC0415
        from ..models.run_per_model_usage_item import RunPerModelUsageItem  # noqa: PLC0415

        d = dict(src_dict)
        created_at = d.pop("created_at")

        data_source = RunDataSource.from_dict(d.pop("data_source"))

        def _parse_error(data: object) -> EvalError | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = EvalError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EvalError | None, data)

        error = _parse_error(d.pop("error"))

        eval_id = d.pop("eval_id")

        id = d.pop("id")

        def _parse_metadata(data: object) -> None | RunMetadataType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = RunMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunMetadataType0, data)

        metadata = _parse_metadata(d.pop("metadata"))

        model = d.pop("model")

        def _parse_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        name = _parse_name(d.pop("name"))

        per_model_usage = []
        _per_model_usage = d.pop("per_model_usage")
        for per_model_usage_item_data in _per_model_usage:
            per_model_usage_item = RunPerModelUsageItem.from_dict(per_model_usage_item_data)

            per_model_usage.append(per_model_usage_item)

        per_testing_criteria_results = []
        _per_testing_criteria_results = d.pop("per_testing_criteria_results")
        for per_testing_criteria_results_item_data in _per_testing_criteria_results:
            per_testing_criteria_results_item = CriterionCounts.from_dict(per_testing_criteria_results_item_data)

            per_testing_criteria_results.append(per_testing_criteria_results_item)

        report_url = d.pop("report_url")

        result_counts = ResultCounts.from_dict(d.pop("result_counts"))

        status = check_run_status(d.pop("status"))

        object_ = cast(Literal["eval.run"] | Unset, d.pop("object", UNSET))
        if object_ != "eval.run" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'eval.run', got '{object_}'")

        run = cls(
            created_at=created_at,
            data_source=data_source,
            error=error,
            eval_id=eval_id,
            id=id,
            metadata=metadata,
            model=model,
            name=name,
            per_model_usage=per_model_usage,
            per_testing_criteria_results=per_testing_criteria_results,
            report_url=report_url,
            result_counts=result_counts,
            status=status,
            object_=object_,
        )

        run.additional_properties = d
        return run

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
