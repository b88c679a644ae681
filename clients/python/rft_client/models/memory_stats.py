# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="MemoryStats")


@_attrs_define
class MemoryStats:
    """Peak memory of the step, for sizing micro_batch_size and gradient_checkpointing.

    Attributes:
        device (str): Where the job trains: cuda:N or cpu.
        peak_allocated_gb (float): GiB. On a GPU: the peak of memory allocated to tensors during this step (PyTorch's
            caching allocator; the vLLM engine's own reservation is not included). On a CPU: the process's peak resident set
            so far (a high-water mark that never goes down).
        device_total_gb (float | None | Unset): The GPU's total memory in GiB; null on a CPU.
    """

    device: str
    peak_allocated_gb: float
    device_total_gb: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        device = self.device

        peak_allocated_gb = self.peak_allocated_gb

        device_total_gb: float | None | Unset
        if isinstance(self.device_total_gb, Unset):
            device_total_gb = UNSET
        else:
            device_total_gb = self.device_total_gb

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "device": device,
                "peak_allocated_gb": peak_allocated_gb,
            }
        )
        if device_total_gb is not UNSET:
            field_dict["device_total_gb"] = device_total_gb

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        device = d.pop("device")

        peak_allocated_gb = d.pop("peak_allocated_gb")

        def _parse_device_total_gb(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        device_total_gb = _parse_device_total_gb(d.pop("device_total_gb", UNSET))

        memory_stats = cls(
            device=device,
            peak_allocated_gb=peak_allocated_gb,
            device_total_gb=device_total_gb,
        )

        memory_stats.additional_properties = d
        return memory_stats

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
