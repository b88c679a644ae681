# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.format_grader_flags_item import FormatGraderFlagsItem, check_format_grader_flags_item
from ..models.format_grader_mode import FormatGraderMode, check_format_grader_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="FormatGrader")


@_attrs_define
class FormatGrader:
    """``regex`` with the R1 format as default: ``<think>…</think>`` then ``<answer>…</answer>``, whole text.

    Attributes:
        flags (list[FormatGraderFlagsItem] | Unset):
        input_ (str | Unset):  Default: '{{sample.output_text}}'.
        mode (FormatGraderMode | Unset):  Default: 'fullmatch'.
        name (str | Unset):  Default: 'format'.
        pattern (str | Unset):  Default: '\\\\\\\\s*<think>.*?</think>\\\\\\\\s*<answer>.*?</answer>\\\\\\\\s*'.
        type_ (Literal['format'] | Unset):  Default: 'format'.
    """

    flags: list[FormatGraderFlagsItem] | Unset = UNSET
    input_: str | Unset = "{{sample.output_text}}"
    mode: FormatGraderMode | Unset = "fullmatch"
    name: str | Unset = "format"
    pattern: str | Unset = "\\\\s*<think>.*?</think>\\\\s*<answer>.*?</answer>\\\\s*"
    type_: Literal["format"] | Unset = "format"

    def to_dict(self) -> dict[str, Any]:
        flags: list[str] | Unset = UNSET
        if not isinstance(self.flags, Unset):
            flags = []
            for flags_item_data in self.flags:
                flags_item: str = flags_item_data
                flags.append(flags_item)

        input_ = self.input_

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode

        name = self.name

        pattern = self.pattern

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if flags is not UNSET:
            field_dict["flags"] = flags
        if input_ is not UNSET:
            field_dict["input"] = input_
        if mode is not UNSET:
            field_dict["mode"] = mode
        if name is not UNSET:
            field_dict["name"] = name
        if pattern is not UNSET:
            field_dict["pattern"] = pattern
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _flags = d.pop("flags", UNSET)
        flags: list[FormatGraderFlagsItem] | Unset = UNSET
        if _flags is not UNSET:
            flags = []
            for flags_item_data in _flags:
                flags_item = check_format_grader_flags_item(flags_item_data)

                flags.append(flags_item)

        input_ = d.pop("input", UNSET)

        _mode = d.pop("mode", UNSET)
        mode: FormatGraderMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = check_format_grader_mode(_mode)

        name = d.pop("name", UNSET)

        pattern = d.pop("pattern", UNSET)

        type_ = cast(Literal["format"] | Unset, d.pop("type", UNSET))
        if type_ != "format" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'format', got '{type_}'")

        format_grader = cls(
            flags=flags,
            input_=input_,
            mode=mode,
            name=name,
            pattern=pattern,
            type_=type_,
        )

        return format_grader
