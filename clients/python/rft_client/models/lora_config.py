# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LoraConfig")


@_attrs_define
class LoraConfig:
    """Low-rank adapter shape (Hu et al., 2021, arXiv:2106.09685). The adapter is what users download.

    Attributes:
        alpha (float | Unset): LoRA scaling numerator; the update is scaled by alpha/r. Default: 32.0.
        dropout (float | Unset): Dropout on the LoRA input. Default: 0.0.
        rank (int | Unset): LoRA rank r. Default: 16.
        target_modules (list[str] | Literal['all-linear'] | Unset): Module names to adapt, or 'all-linear' for every
            linear layer but the head.
    """

    alpha: float | Unset = 32.0
    dropout: float | Unset = 0.0
    rank: int | Unset = 16
    target_modules: list[str] | Literal["all-linear"] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        alpha = self.alpha

        dropout = self.dropout

        rank = self.rank

        target_modules: list[str] | Literal["all-linear"] | Unset
        if isinstance(self.target_modules, Unset):
            target_modules = UNSET
        elif isinstance(self.target_modules, list):
            target_modules = self.target_modules

        else:
            target_modules = self.target_modules

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if alpha is not UNSET:
            field_dict["alpha"] = alpha
        if dropout is not UNSET:
            field_dict["dropout"] = dropout
        if rank is not UNSET:
            field_dict["rank"] = rank
        if target_modules is not UNSET:
            field_dict["target_modules"] = target_modules

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        alpha = d.pop("alpha", UNSET)

        dropout = d.pop("dropout", UNSET)

        rank = d.pop("rank", UNSET)

        def _parse_target_modules(data: object) -> list[str] | Literal["all-linear"] | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                target_modules_type_0 = cast(list[str], data)

                return target_modules_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            target_modules_type_1 = cast(Literal["all-linear"], data)
            if target_modules_type_1 != "all-linear":
                raise ValueError(f"target_modules_type_1 must match const 'all-linear', got '{target_modules_type_1}'")
            return target_modules_type_1

        target_modules = _parse_target_modules(d.pop("target_modules", UNSET))

        lora_config = cls(
            alpha=alpha,
            dropout=dropout,
            rank=rank,
            target_modules=target_modules,
        )

        return lora_config
