# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run_create_data_source import RunCreateDataSource
    from ..models.run_create_metadata_type_0 import RunCreateMetadataType0


T = TypeVar("T", bound="RunCreate")


@_attrs_define
class RunCreate:
    """
    Attributes:
        data_source (RunCreateDataSource): A `completions` data source (the only type here).
        metadata (None | RunCreateMetadataType0 | Unset):
        name (None | str | Unset):
    """

    data_source: RunCreateDataSource
    metadata: None | RunCreateMetadataType0 | Unset = UNSET
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.run_create_metadata_type_0 import RunCreateMetadataType0  # noqa: PLC0415

        data_source = self.data_source.to_dict()

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, RunCreateMetadataType0):
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
                "data_source": data_source,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_create_data_source import RunCreateDataSource  # noqa: PLC0415
        from ..models.run_create_metadata_type_0 import RunCreateMetadataType0  # noqa: PLC0415

        d = dict(src_dict)
        data_source = RunCreateDataSource.from_dict(d.pop("data_source"))

        def _parse_metadata(data: object) -> None | RunCreateMetadataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = RunCreateMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunCreateMetadataType0 | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        run_create = cls(
            data_source=data_source,
            metadata=metadata,
            name=name,
        )

        return run_create
