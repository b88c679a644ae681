# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.grader_error_rate import GraderErrorRate


T = TypeVar("T", bound="StepErrors")


@_attrs_define
class StepErrors:
    """
    Attributes:
        graders (list[GraderErrorRate] | Unset): Graders that scored, with errors.
        samples (list[str] | Unset): The first few scoring errors, each naming the training row.
    """

    graders: list[GraderErrorRate] | Unset = UNSET
    samples: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        graders: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.graders, Unset):
            graders = []
            for graders_item_data in self.graders:
                graders_item = graders_item_data.to_dict()
                graders.append(graders_item)

        samples: list[str] | Unset = UNSET
        if not isinstance(self.samples, Unset):
            samples = self.samples

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if graders is not UNSET:
            field_dict["graders"] = graders
        if samples is not UNSET:
            field_dict["samples"] = samples

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.grader_error_rate import GraderErrorRate  # noqa: PLC0415

        d = dict(src_dict)
        _graders = d.pop("graders", UNSET)
        graders: list[GraderErrorRate] | Unset = UNSET
        if _graders is not UNSET:
            graders = []
            for graders_item_data in _graders:
                graders_item = GraderErrorRate.from_dict(graders_item_data)

                graders.append(graders_item)

        samples = cast(list[str], d.pop("samples", UNSET))

        step_errors = cls(
            graders=graders,
            samples=samples,
        )

        step_errors.additional_properties = d
        return step_errors

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
