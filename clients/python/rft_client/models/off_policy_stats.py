# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.off_policy_stats_staleness import OffPolicyStatsStaleness


T = TypeVar("T", bound="OffPolicyStats")


@_attrs_define
class OffPolicyStats:
    """How far the policy that sampled a step's batch was from the one trained on it (grpo_core.update.correction):
    reported whenever a separate engine sampled (merged, vLLM), at every max_staleness.

        Attributes:
            bounded_share (float): Share of loss tokens whose weight the bound changed: truncated at tis_cap (TIS) or masked
                (MIS).
            is_weight_max (float): Largest importance weight before its bound.
            is_weight_mean (float): Mean importance weight π_trainer/π_sampler after its bound.
            max_staleness (int): The job's bound k: 0 = synchronous.
            mismatch_kl (float): Mean per-token k3 estimate of KL(π_sampler ‖ π_trainer) over the loss tokens: rounding and
                kernels at k = 0, plus the policy's drift over the lag at k > 0.
            staleness (OffPolicyStatsStaleness): Samples trained on at each lag: {versions behind the trained policy:
                samples}.
            stale_samples_dropped (int | Unset): Samples older than max_staleness, dropped before the update. Default: 0.
    """

    bounded_share: float
    is_weight_max: float
    is_weight_mean: float
    max_staleness: int
    mismatch_kl: float
    staleness: OffPolicyStatsStaleness
    stale_samples_dropped: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bounded_share = self.bounded_share

        is_weight_max = self.is_weight_max

        is_weight_mean = self.is_weight_mean

        max_staleness = self.max_staleness

        mismatch_kl = self.mismatch_kl

        staleness = self.staleness.to_dict()

        stale_samples_dropped = self.stale_samples_dropped

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bounded_share": bounded_share,
                "is_weight_max": is_weight_max,
                "is_weight_mean": is_weight_mean,
                "max_staleness": max_staleness,
                "mismatch_kl": mismatch_kl,
                "staleness": staleness,
            }
        )
        if stale_samples_dropped is not UNSET:
            field_dict["stale_samples_dropped"] = stale_samples_dropped

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.off_policy_stats_staleness import OffPolicyStatsStaleness  # noqa: PLC0415

        d = dict(src_dict)
        bounded_share = d.pop("bounded_share")

        is_weight_max = d.pop("is_weight_max")

        is_weight_mean = d.pop("is_weight_mean")

        max_staleness = d.pop("max_staleness")

        mismatch_kl = d.pop("mismatch_kl")

        staleness = OffPolicyStatsStaleness.from_dict(d.pop("staleness"))

        stale_samples_dropped = d.pop("stale_samples_dropped", UNSET)

        off_policy_stats = cls(
            bounded_share=bounded_share,
            is_weight_max=is_weight_max,
            is_weight_mean=is_weight_mean,
            max_staleness=max_staleness,
            mismatch_kl=mismatch_kl,
            staleness=staleness,
            stale_samples_dropped=stale_samples_dropped,
        )

        off_policy_stats.additional_properties = d
        return off_policy_stats

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
