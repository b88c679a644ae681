# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.output_item_datasource_item import OutputItemDatasourceItem
    from ..models.output_item_result import OutputItemResult
    from ..models.output_item_sample import OutputItemSample


T = TypeVar("T", bound="OutputItem")


@_attrs_define
class OutputItem:
    """
    Attributes:
        created_at (int):
        datasource_item (OutputItemDatasourceItem):
        datasource_item_id (int):
        eval_id (str):
        id (str):
        results (list[OutputItemResult]):
        run_id (str):
        sample (OutputItemSample):
        samples (list[OutputItemSample]): Every sample when n > 1 (`sample` is the first).
        status (str):
        object_ (Literal['eval.run.output_item'] | Unset):  Default: 'eval.run.output_item'.
    """

    created_at: int
    datasource_item: OutputItemDatasourceItem
    datasource_item_id: int
    eval_id: str
    id: str
    results: list[OutputItemResult]
    run_id: str
    sample: OutputItemSample
    samples: list[OutputItemSample]
    status: str
    object_: Literal["eval.run.output_item"] | Unset = "eval.run.output_item"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        datasource_item = self.datasource_item.to_dict()

        datasource_item_id = self.datasource_item_id

        eval_id = self.eval_id

        id = self.id

        results = []
        for results_item_data in self.results:
            results_item = results_item_data.to_dict()
            results.append(results_item)

        run_id = self.run_id

        sample = self.sample.to_dict()

        samples = []
        for samples_item_data in self.samples:
            samples_item = samples_item_data.to_dict()
            samples.append(samples_item)

        status = self.status

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "datasource_item": datasource_item,
                "datasource_item_id": datasource_item_id,
                "eval_id": eval_id,
                "id": id,
                "results": results,
                "run_id": run_id,
                "sample": sample,
                "samples": samples,
                "status": status,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.output_item_datasource_item import OutputItemDatasourceItem  # noqa: PLC0415
        from ..models.output_item_result import OutputItemResult  # noqa: PLC0415
        from ..models.output_item_sample import OutputItemSample  # noqa: PLC0415

        d = dict(src_dict)
        created_at = d.pop("created_at")

        datasource_item = OutputItemDatasourceItem.from_dict(d.pop("datasource_item"))

        datasource_item_id = d.pop("datasource_item_id")

        eval_id = d.pop("eval_id")

        id = d.pop("id")

        results = []
        _results = d.pop("results")
        for results_item_data in _results:
            results_item = OutputItemResult.from_dict(results_item_data)

            results.append(results_item)

        run_id = d.pop("run_id")

        sample = OutputItemSample.from_dict(d.pop("sample"))

        samples = []
        _samples = d.pop("samples")
        for samples_item_data in _samples:
            samples_item = OutputItemSample.from_dict(samples_item_data)

            samples.append(samples_item)

        status = d.pop("status")

        object_ = cast(Literal["eval.run.output_item"] | Unset, d.pop("object", UNSET))
        if object_ != "eval.run.output_item" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'eval.run.output_item', got '{object_}'")

        output_item = cls(
            created_at=created_at,
            datasource_item=datasource_item,
            datasource_item_id=datasource_item_id,
            eval_id=eval_id,
            id=id,
            results=results,
            run_id=run_id,
            sample=sample,
            samples=samples,
            status=status,
            object_=object_,
        )

        output_item.additional_properties = d
        return output_item

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
