# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.math_grader_extract import MathGraderExtract, check_math_grader_extract
from ..types import UNSET, Unset

T = TypeVar("T", bound="MathGrader")


@_attrs_define
class MathGrader:
    """1.0 when the answer in the completion is mathematically equal to ``reference`` (math-verify: LaTeX,
    fractions, sets, intervals); the answer is the last ``\\boxed{}``, else the ``<answer>`` tag, else the text.

        Attributes:
            extract (MathGraderExtract | Unset):  Default: 'auto'.
            name (str | Unset):  Default: 'math'.
            reference (str | Unset): Template of the gold answer. Default: '{{item.answer}}'.
            type_ (Literal['math'] | Unset):  Default: 'math'.
    """

    extract: MathGraderExtract | Unset = "auto"
    name: str | Unset = "math"
    reference: str | Unset = "{{item.answer}}"
    type_: Literal["math"] | Unset = "math"

    def to_dict(self) -> dict[str, Any]:
        extract: str | Unset = UNSET
        if not isinstance(self.extract, Unset):
            extract = self.extract

        name = self.name

        reference = self.reference

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if extract is not UNSET:
            field_dict["extract"] = extract
        if name is not UNSET:
            field_dict["name"] = name
        if reference is not UNSET:
            field_dict["reference"] = reference
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _extract = d.pop("extract", UNSET)
        extract: MathGraderExtract | Unset
        if isinstance(_extract, Unset):
            extract = UNSET
        else:
            extract = check_math_grader_extract(_extract)

        name = d.pop("name", UNSET)

        reference = d.pop("reference", UNSET)

        type_ = cast(Literal["math"] | Unset, d.pop("type", UNSET))
        if type_ != "math" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'math', got '{type_}'")

        math_grader = cls(
            extract=extract,
            name=name,
            reference=reference,
            type_=type_,
        )

        return math_grader
