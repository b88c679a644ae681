# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PreflightConfig")


@_attrs_define
class PreflightConfig:
    """The RL-readiness probe before training: the base model sampled ``samples`` times on ``prompts`` training
    prompts and scored by the job's graders; the job shows the report and a verdict.

        Attributes:
            compare_after (bool | Unset): Probe the trained adapter on the same prompts after the last step and compare per
                prompt. Default: True.
            drop_zero_variance_prompts (bool | Unset): Train without the probed prompts whose k rewards were all equal (no
                GRPO signal); the job still runs its planned number of steps, on the rest. Default: False.
            only (bool | Unset): Report and stop: no training (POST /v1/fine_tuning/jobs/preflight sets it). Default: False.
            pass_threshold (float | Unset): A sample passes when its reward is at least this. Default: 0.5.
            prompts (int | Unset): Training prompts probed (all of them if the file is smaller). Default: 64.
            samples (int | Unset): Completions per probed prompt (k). Default: 8.
    """

    compare_after: bool | Unset = True
    drop_zero_variance_prompts: bool | Unset = False
    only: bool | Unset = False
    pass_threshold: float | Unset = 0.5
    prompts: int | Unset = 64
    samples: int | Unset = 8

    def to_dict(self) -> dict[str, Any]:
        compare_after = self.compare_after

        drop_zero_variance_prompts = self.drop_zero_variance_prompts

        only = self.only

        pass_threshold = self.pass_threshold

        prompts = self.prompts

        samples = self.samples

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if compare_after is not UNSET:
            field_dict["compare_after"] = compare_after
        if drop_zero_variance_prompts is not UNSET:
            field_dict["drop_zero_variance_prompts"] = drop_zero_variance_prompts
        if only is not UNSET:
            field_dict["only"] = only
        if pass_threshold is not UNSET:
            field_dict["pass_threshold"] = pass_threshold
        if prompts is not UNSET:
            field_dict["prompts"] = prompts
        if samples is not UNSET:
            field_dict["samples"] = samples

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        compare_after = d.pop("compare_after", UNSET)

        drop_zero_variance_prompts = d.pop("drop_zero_variance_prompts", UNSET)

        only = d.pop("only", UNSET)

        pass_threshold = d.pop("pass_threshold", UNSET)

        prompts = d.pop("prompts", UNSET)

        samples = d.pop("samples", UNSET)

        preflight_config = cls(
            compare_after=compare_after,
            drop_zero_variance_prompts=drop_zero_variance_prompts,
            only=only,
            pass_threshold=pass_threshold,
            prompts=prompts,
            samples=samples,
        )

        return preflight_config
