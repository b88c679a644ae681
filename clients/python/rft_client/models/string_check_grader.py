# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.string_check_grader_operation import StringCheckGraderOperation, check_string_check_grader_operation
from ..types import UNSET, Unset

T = TypeVar("T", bound="StringCheckGrader")


@_attrs_define
class StringCheckGrader:
    """1.0 when ``operation`` holds between the rendered ``input`` and ``reference``, else 0.0.

    ``like``/``ilike`` mean "contains" (case-sensitive / -insensitive), as in OpenAI's grader.

        Attributes:
            reference (str): Template rendered per dataset row, e.g. '{{item.answer}}'.
            input_ (str | Unset): Template rendered per sample. Default: '{{sample.output_text}}'.
            name (str | Unset):  Default: 'string_check'.
            operation (StringCheckGraderOperation | Unset):  Default: 'eq'.
            type_ (Literal['string_check'] | Unset):  Default: 'string_check'.
    """

    reference: str
    input_: str | Unset = "{{sample.output_text}}"
    name: str | Unset = "string_check"
    operation: StringCheckGraderOperation | Unset = "eq"
    type_: Literal["string_check"] | Unset = "string_check"

    def to_dict(self) -> dict[str, Any]:
        reference = self.reference

        input_ = self.input_

        name = self.name

        operation: str | Unset = UNSET
        if not isinstance(self.operation, Unset):
            operation = self.operation

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "reference": reference,
            }
        )
        if input_ is not UNSET:
            field_dict["input"] = input_
        if name is not UNSET:
            field_dict["name"] = name
        if operation is not UNSET:
            field_dict["operation"] = operation
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reference = d.pop("reference")

        input_ = d.pop("input", UNSET)

        name = d.pop("name", UNSET)

        _operation = d.pop("operation", UNSET)
        operation: StringCheckGraderOperation | Unset
        if isinstance(_operation, Unset):
            operation = UNSET
        else:
            operation = check_string_check_grader_operation(_operation)

        type_ = cast(Literal["string_check"] | Unset, d.pop("type", UNSET))
        if type_ != "string_check" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'string_check', got '{type_}'")

        string_check_grader = cls(
            reference=reference,
            input_=input_,
            name=name,
            operation=operation,
            type_=type_,
        )

        return string_check_grader
