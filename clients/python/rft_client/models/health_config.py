# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
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
        entropy_drop (float | Unset): Warn when entropy falls by this share of its value over the first steps. Default:
            0.8.
        entropy_min (float | Unset): Warn when mean token entropy falls below this. Default: 0.05.
        hacking_z (float | Unset): Reward hacking needs a validation drop above this many standard errors of the
            difference. Default: 2.0.
        kl_max (float | Unset): Warn when the KL to the base model exceeds this. Default: 1.0.
        length_growth (float | Unset): Warn when completions grow past this × their start. Default: 2.5.
        mismatch_kl_max (float | Unset): Warn when the sampler/trainer mismatch KL (off_policy.mismatch_kl) exceeds
            this, or has grown tenfold over its first steps' value and past a tenth of this. Default: 0.05.
        window (int | Unset): Steps the trend checks (entropy, no signal) look back over. Default: 5.
        zero_std_max (float | Unset): Warn when this share of groups has no signal, averaged over window steps. Default:
            0.75.
    """

    entropy_drop: float | Unset = 0.8
    entropy_min: float | Unset = 0.05
    hacking_z: float | Unset = 2.0
    kl_max: float | Unset = 1.0
    length_growth: float | Unset = 2.5
    mismatch_kl_max: float | Unset = 0.05
    window: int | Unset = 5
    zero_std_max: float | Unset = 0.75

    def to_dict(self) -> dict[str, Any]:
        entropy_drop = self.entropy_drop

        entropy_min = self.entropy_min

        hacking_z = self.hacking_z

        kl_max = self.kl_max

        length_growth = self.length_growth

        mismatch_kl_max = self.mismatch_kl_max

        window = self.window

        zero_std_max = self.zero_std_max

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if entropy_drop is not UNSET:
            field_dict["entropy_drop"] = entropy_drop
        if entropy_min is not UNSET:
            field_dict["entropy_min"] = entropy_min
        if hacking_z is not UNSET:
            field_dict["hacking_z"] = hacking_z
        if kl_max is not UNSET:
            field_dict["kl_max"] = kl_max
        if length_growth is not UNSET:
            field_dict["length_growth"] = length_growth
        if mismatch_kl_max is not UNSET:
            field_dict["mismatch_kl_max"] = mismatch_kl_max
        if window is not UNSET:
            field_dict["window"] = window
        if zero_std_max is not UNSET:
            field_dict["zero_std_max"] = zero_std_max

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        entropy_drop = d.pop("entropy_drop", UNSET)

        entropy_min = d.pop("entropy_min", UNSET)

        hacking_z = d.pop("hacking_z", UNSET)

        kl_max = d.pop("kl_max", UNSET)

        length_growth = d.pop("length_growth", UNSET)

        mismatch_kl_max = d.pop("mismatch_kl_max", UNSET)

        window = d.pop("window", UNSET)

        zero_std_max = d.pop("zero_std_max", UNSET)

        health_config = cls(
            entropy_drop=entropy_drop,
            entropy_min=entropy_min,
            hacking_z=hacking_z,
            kl_max=kl_max,
            length_growth=length_growth,
            mismatch_kl_max=mismatch_kl_max,
            window=window,
            zero_std_max=zero_std_max,
        )

        return health_config
