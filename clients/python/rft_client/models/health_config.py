from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="HealthConfig")


@_attrs_define
class HealthConfig:
    """
    Attributes:
        entropy_min (float | Unset): Warn when mean token entropy falls below this. Default: 0.05.
        kl_max (float | Unset): Warn when the KL to the base model exceeds this. Default: 1.0.
        length_growth (float | Unset): Warn when completions grow past this × their start. Default: 2.5.
        window (int | Unset): ...for this many consecutive steps. Default: 5.
        zero_std_max (float | Unset): Warn when this share of groups has no signal... Default: 0.9.
    """

    entropy_min: float | Unset = 0.05
    kl_max: float | Unset = 1.0
    length_growth: float | Unset = 2.5
    window: int | Unset = 5
    zero_std_max: float | Unset = 0.9

    def to_dict(self) -> dict[str, Any]:
        entropy_min = self.entropy_min

        kl_max = self.kl_max

        length_growth = self.length_growth

        window = self.window

        zero_std_max = self.zero_std_max

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if entropy_min is not UNSET:
            field_dict["entropy_min"] = entropy_min
        if kl_max is not UNSET:
            field_dict["kl_max"] = kl_max
        if length_growth is not UNSET:
            field_dict["length_growth"] = length_growth
        if window is not UNSET:
            field_dict["window"] = window
        if zero_std_max is not UNSET:
            field_dict["zero_std_max"] = zero_std_max

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        entropy_min = d.pop("entropy_min", UNSET)

        kl_max = d.pop("kl_max", UNSET)

        length_growth = d.pop("length_growth", UNSET)

        window = d.pop("window", UNSET)

        zero_std_max = d.pop("zero_std_max", UNSET)

        health_config = cls(
            entropy_min=entropy_min,
            kl_max=kl_max,
            length_growth=length_growth,
            window=window,
            zero_std_max=zero_std_max,
        )

        return health_config
