# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.eval_create_data_source_config import EvalCreateDataSourceConfig
    from ..models.eval_create_metadata_type_0 import EvalCreateMetadataType0
    from ..models.eval_create_testing_criteria_item import EvalCreateTestingCriteriaItem


T = TypeVar("T", bound="EvalCreate")


@_attrs_define
class EvalCreate:
    """
    Attributes:
        data_source_config (EvalCreateDataSourceConfig): `{type: custom, item_schema}` (the only type here).
        testing_criteria (list[EvalCreateTestingCriteriaItem]): Graders as jobs use them, each with an optional
            pass_threshold.
        metadata (EvalCreateMetadataType0 | None | Unset):
        name (None | str | Unset):
    """

    data_source_config: EvalCreateDataSourceConfig
    testing_criteria: list[EvalCreateTestingCriteriaItem]
    metadata: EvalCreateMetadataType0 | None | Unset = UNSET
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.eval_create_metadata_type_0 import EvalCreateMetadataType0  # noqa: PLC0415

        data_source_config = self.data_source_config.to_dict()

        testing_criteria = []
        for testing_criteria_item_data in self.testing_criteria:
            testing_criteria_item = testing_criteria_item_data.to_dict()
            testing_criteria.append(testing_criteria_item)

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, EvalCreateMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "data_source_config": data_source_config,
                "testing_criteria": testing_criteria,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.eval_create_data_source_config import EvalCreateDataSourceConfig  # noqa: PLC0415
        from ..models.eval_create_metadata_type_0 import EvalCreateMetadataType0  # noqa: PLC0415
        from ..models.eval_create_testing_criteria_item import EvalCreateTestingCriteriaItem  # noqa: PLC0415

        d = dict(src_dict)
        data_source_config = EvalCreateDataSourceConfig.from_dict(d.pop("data_source_config"))

        testing_criteria = []
        _testing_criteria = d.pop("testing_criteria")
        for testing_criteria_item_data in _testing_criteria:
            testing_criteria_item = EvalCreateTestingCriteriaItem.from_dict(testing_criteria_item_data)

            testing_criteria.append(testing_criteria_item)

        def _parse_metadata(data: object) -> EvalCreateMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = EvalCreateMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EvalCreateMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        eval_create = cls(
            data_source_config=data_source_config,
            testing_criteria=testing_criteria,
            metadata=metadata,
            name=name,
        )

        return eval_create
