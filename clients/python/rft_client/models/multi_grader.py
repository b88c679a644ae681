# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.multi_grader_graders import MultiGraderGraders


T = TypeVar("T", bound="MultiGrader")


@_attrs_define
class MultiGrader:
    """Named sub-graders combined by ``calculate_output`` (OpenAI's multi): a formula over the sub-grader names
    with + - * / ^, min, max, abs, floor, ceil, exp, sqrt, log — parsed into a tree and evaluated by us, never
    ``eval``. Without ``calculate_output`` (our extension) the sub-graders are separate reward columns, combined
    by the hyperparameters ``reward_weights`` (in this order) and ``reward_aggregation``.

        Attributes:
            graders (MultiGraderGraders):
            calculate_output (None | str | Unset):
            name (str | Unset):  Default: 'multi'.
            type_ (Literal['multi'] | Unset):  Default: 'multi'.
    """

    graders: MultiGraderGraders
    calculate_output: None | str | Unset = UNSET
    name: str | Unset = "multi"
    type_: Literal["multi"] | Unset = "multi"

    def to_dict(self) -> dict[str, Any]:
        graders = self.graders.to_dict()

        calculate_output: None | str | Unset
        if isinstance(self.calculate_output, Unset):
            calculate_output = UNSET
        else:
            calculate_output = self.calculate_output

        name = self.name

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "graders": graders,
            }
        )
        if calculate_output is not UNSET:
            field_dict["calculate_output"] = calculate_output
        if name is not UNSET:
            field_dict["name"] = name
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.multi_grader_graders import MultiGraderGraders  # noqa: PLC0415

        d = dict(src_dict)
        graders = MultiGraderGraders.from_dict(d.pop("graders"))

        def _parse_calculate_output(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        calculate_output = _parse_calculate_output(d.pop("calculate_output", UNSET))

        name = d.pop("name", UNSET)

        type_ = cast(Literal["multi"] | Unset, d.pop("type", UNSET))
        if type_ != "multi" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'multi', got '{type_}'")

        multi_grader = cls(
            graders=graders,
            calculate_output=calculate_output,
            name=name,
            type_=type_,
        )

        return multi_grader
