# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.usage_device_seconds_by_kind import UsageDeviceSecondsByKind


T = TypeVar("T", bound="Usage")


@_attrs_define
class Usage:
    """Every counter: a job's, plus what eval runs and inference through this API used.

    Attributes:
        attempts (int | Unset): Attempts metered (claims of a job that ran). Default: 0.
        device_seconds (float | Unset): Devices × seconds from each attempt's claim to its worker's last contact (all
            nodes). Default: 0.0.
        device_seconds_by_kind (UsageDeviceSecondsByKind | Unset): device_seconds by what the devices are: a GPU's name,
            'cpu (model)'; 'unknown' before the worker reported it.
        eval_tokens (int | Unset): Prompt and completion tokens of eval runs' samples. Default: 0.
        grader_calls (int | Unset): Samples scored × reward columns (graders). Default: 0.
        grader_seconds (float | Unset): Wall-clock seconds the steps spent scoring. Default: 0.0.
        inference_tokens (int | Unset): Tokens of /v1/chat/completions and /v1/completions answers. Default: 0.
        sampled_tokens (int | Unset): Completion tokens sampled, those dropped by dynamic sampling included. Default: 0.
        steps (int | Unset): Optimizer steps run, each attempt's own (a resumed attempt's re-run steps too). Default: 0.
        trained_tokens (int | Unset): Completion tokens of the batches the updates trained on. Default: 0.
    """

    attempts: int | Unset = 0
    device_seconds: float | Unset = 0.0
    device_seconds_by_kind: UsageDeviceSecondsByKind | Unset = UNSET
    eval_tokens: int | Unset = 0
    grader_calls: int | Unset = 0
    grader_seconds: float | Unset = 0.0
    inference_tokens: int | Unset = 0
    sampled_tokens: int | Unset = 0
    steps: int | Unset = 0
    trained_tokens: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        device_seconds = self.device_seconds

        device_seconds_by_kind: dict[str, Any] | Unset = UNSET
        if not isinstance(self.device_seconds_by_kind, Unset):
            device_seconds_by_kind = self.device_seconds_by_kind.to_dict()

        eval_tokens = self.eval_tokens

        grader_calls = self.grader_calls

        grader_seconds = self.grader_seconds

        inference_tokens = self.inference_tokens

        sampled_tokens = self.sampled_tokens

        steps = self.steps

        trained_tokens = self.trained_tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if attempts is not UNSET:
            field_dict["attempts"] = attempts
        if device_seconds is not UNSET:
            field_dict["device_seconds"] = device_seconds
        if device_seconds_by_kind is not UNSET:
            field_dict["device_seconds_by_kind"] = device_seconds_by_kind
        if eval_tokens is not UNSET:
            field_dict["eval_tokens"] = eval_tokens
        if grader_calls is not UNSET:
            field_dict["grader_calls"] = grader_calls
        if grader_seconds is not UNSET:
            field_dict["grader_seconds"] = grader_seconds
        if inference_tokens is not UNSET:
            field_dict["inference_tokens"] = inference_tokens
        if sampled_tokens is not UNSET:
            field_dict["sampled_tokens"] = sampled_tokens
        if steps is not UNSET:
            field_dict["steps"] = steps
        if trained_tokens is not UNSET:
            field_dict["trained_tokens"] = trained_tokens

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage_device_seconds_by_kind import UsageDeviceSecondsByKind  # noqa: PLC0415

        d = dict(src_dict)
        attempts = d.pop("attempts", UNSET)

        device_seconds = d.pop("device_seconds", UNSET)

        _device_seconds_by_kind = d.pop("device_seconds_by_kind", UNSET)
        device_seconds_by_kind: UsageDeviceSecondsByKind | Unset
        if isinstance(_device_seconds_by_kind, Unset):
            device_seconds_by_kind = UNSET
        else:
            device_seconds_by_kind = UsageDeviceSecondsByKind.from_dict(_device_seconds_by_kind)

        eval_tokens = d.pop("eval_tokens", UNSET)

        grader_calls = d.pop("grader_calls", UNSET)

        grader_seconds = d.pop("grader_seconds", UNSET)

        inference_tokens = d.pop("inference_tokens", UNSET)

        sampled_tokens = d.pop("sampled_tokens", UNSET)

        steps = d.pop("steps", UNSET)

        trained_tokens = d.pop("trained_tokens", UNSET)

        usage = cls(
            attempts=attempts,
            device_seconds=device_seconds,
            device_seconds_by_kind=device_seconds_by_kind,
            eval_tokens=eval_tokens,
            grader_calls=grader_calls,
            grader_seconds=grader_seconds,
            inference_tokens=inference_tokens,
            sampled_tokens=sampled_tokens,
            steps=steps,
            trained_tokens=trained_tokens,
        )

        usage.additional_properties = d
        return usage

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
