# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.reinforcement_method import ReinforcementMethod


T = TypeVar("T", bound="Method")


@_attrs_define
class Method:
    """
    Attributes:
        reinforcement (ReinforcementMethod):
        type_ (Literal['reinforcement']): Only reinforcement (GRPO) jobs are run by this service.
    """

    reinforcement: ReinforcementMethod
    type_: Literal["reinforcement"]

    def to_dict(self) -> dict[str, Any]:
        reinforcement = self.reinforcement.to_dict()

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "reinforcement": reinforcement,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.reinforcement_method import ReinforcementMethod  # noqa: PLC0415

        d = dict(src_dict)
        reinforcement = ReinforcementMethod.from_dict(d.pop("reinforcement"))

        type_ = cast(Literal["reinforcement"], d.pop("type"))
        if type_ != "reinforcement":
            raise ValueError(f"type must match const 'reinforcement', got '{type_}'")

        method = cls(
            reinforcement=reinforcement,
            type_=type_,
        )

        return method
