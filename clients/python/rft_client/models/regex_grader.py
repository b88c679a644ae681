# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.regex_grader_flags_item import RegexGraderFlagsItem, check_regex_grader_flags_item
from ..models.regex_grader_mode import RegexGraderMode, check_regex_grader_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="RegexGrader")


@_attrs_define
class RegexGrader:
    """1.0 when ``pattern`` matches the rendered ``input`` (``fullmatch`` or ``search``), else 0.0. The format
    reward of R1-style training is ``pattern: "<think>.*?</think>\\s*<answer>.*?</answer>"`` with ``fullmatch``.

        Attributes:
            pattern (str):
            flags (list[RegexGraderFlagsItem] | Unset):
            input_ (str | Unset):  Default: '{{sample.output_text}}'.
            mode (RegexGraderMode | Unset):  Default: 'search'.
            name (str | Unset):  Default: 'regex'.
            type_ (Literal['regex'] | Unset):  Default: 'regex'.
    """

    pattern: str
    flags: list[RegexGraderFlagsItem] | Unset = UNSET
    input_: str | Unset = "{{sample.output_text}}"
    mode: RegexGraderMode | Unset = "search"
    name: str | Unset = "regex"
    type_: Literal["regex"] | Unset = "regex"

    def to_dict(self) -> dict[str, Any]:
        pattern = self.pattern

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

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "pattern": pattern,
            }
        )
        if flags is not UNSET:
            field_dict["flags"] = flags
        if input_ is not UNSET:
            field_dict["input"] = input_
        if mode is not UNSET:
            field_dict["mode"] = mode
        if name is not UNSET:
            field_dict["name"] = name
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        pattern = d.pop("pattern")

        _flags = d.pop("flags", UNSET)
        flags: list[RegexGraderFlagsItem] | Unset = UNSET
        if _flags is not UNSET:
            flags = []
            for flags_item_data in _flags:
                flags_item = check_regex_grader_flags_item(flags_item_data)

                flags.append(flags_item)

        input_ = d.pop("input", UNSET)

        _mode = d.pop("mode", UNSET)
        mode: RegexGraderMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = check_regex_grader_mode(_mode)

        name = d.pop("name", UNSET)

        type_ = cast(Literal["regex"] | Unset, d.pop("type", UNSET))
        if type_ != "regex" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'regex', got '{type_}'")

        regex_grader = cls(
            pattern=pattern,
            flags=flags,
            input_=input_,
            mode=mode,
            name=name,
            type_=type_,
        )

        return regex_grader
