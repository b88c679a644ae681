# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.length_grader_mode import LengthGraderMode, check_length_grader_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="LengthGrader")


@_attrs_define
class LengthGrader:
    """A length term on the completion's characters: ``linear`` is −max(0, len − target)/scale (a penalty), and
    ``soft_overlong`` is DAPO's soft punishment (0 up to ``target``, linear to −1 at ``target + buffer``).

        Attributes:
            target (int): Characters allowed without penalty.
            buffer (int | Unset): soft_overlong: characters over which the penalty reaches −1. Default: 1000.
            mode (LengthGraderMode | Unset):  Default: 'linear'.
            name (str | Unset):  Default: 'length'.
            scale (float | Unset): linear: characters per unit of penalty. Default: 1000.0.
            type_ (Literal['length'] | Unset):  Default: 'length'.
    """

    target: int
    buffer: int | Unset = 1000
    mode: LengthGraderMode | Unset = "linear"
    name: str | Unset = "length"
    scale: float | Unset = 1000.0
    type_: Literal["length"] | Unset = "length"

    def to_dict(self) -> dict[str, Any]:
        target = self.target

        buffer = self.buffer

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode

        name = self.name

        scale = self.scale

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "target": target,
            }
        )
        if buffer is not UNSET:
            field_dict["buffer"] = buffer
        if mode is not UNSET:
            field_dict["mode"] = mode
        if name is not UNSET:
            field_dict["name"] = name
        if scale is not UNSET:
            field_dict["scale"] = scale
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        target = d.pop("target")

        buffer = d.pop("buffer", UNSET)

        _mode = d.pop("mode", UNSET)
        mode: LengthGraderMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = check_length_grader_mode(_mode)

        name = d.pop("name", UNSET)

        scale = d.pop("scale", UNSET)

        type_ = cast(Literal["length"] | Unset, d.pop("type", UNSET))
        if type_ != "length" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'length', got '{type_}'")

        length_grader = cls(
            target=target,
            buffer=buffer,
            mode=mode,
            name=name,
            scale=scale,
            type_=type_,
        )

        return length_grader
