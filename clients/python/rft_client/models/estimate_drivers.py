# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="EstimateDrivers")


@_attrs_define
class EstimateDrivers:
    """What the estimate is made of: the job's shape and the rates measured on this device kind.

    Attributes:
        completion_tokens_per_sample (float): Expected mean completion length: max_completion_tokens × the share earlier
            jobs of this model used of theirs.
        devices (int): Devices × nodes: every device of the job is billed.
        evals (int): Validation runs (eval_interval, and the last step) × validation prompts.
        grader_calls (int):
        overhead_seconds_per_step (float): Per step, beyond sampling, scoring and the update.
        prompts_per_step (int):
        sampled_tokens (int): Over the whole job.
        samples_per_prompt (int): Completions drawn per prompt (gfpo_sample_size or group_size).
        seconds_per_decode_row (float): What each row (prompt × completion) adds to a decode step.
        seconds_per_decode_step (float): What one decode step of sampling costs, whatever the rows.
        seconds_per_eval_prompt (float):
        seconds_per_grader_call (float):
        seconds_per_sampled_token (float): The two above over this job's expected tokens.
        seconds_per_trained_token (float): The two above over this job's expected tokens.
        seconds_per_update_row (float): What the update costs a row (prompt × completion).
        seconds_per_update_row_token (float): What each max_completion_token adds to a row's update.
        setup_seconds (float): Per attempt: loading the model, the first contact, the last upload.
        steps (int): Optimizer steps the job will take.
        trained_tokens (int):
    """

    completion_tokens_per_sample: float
    devices: int
    evals: int
    grader_calls: int
    overhead_seconds_per_step: float
    prompts_per_step: int
    sampled_tokens: int
    samples_per_prompt: int
    seconds_per_decode_row: float
    seconds_per_decode_step: float
    seconds_per_eval_prompt: float
    seconds_per_grader_call: float
    seconds_per_sampled_token: float
    seconds_per_trained_token: float
    seconds_per_update_row: float
    seconds_per_update_row_token: float
    setup_seconds: float
    steps: int
    trained_tokens: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        completion_tokens_per_sample = self.completion_tokens_per_sample

        devices = self.devices

        evals = self.evals

        grader_calls = self.grader_calls

        overhead_seconds_per_step = self.overhead_seconds_per_step

        prompts_per_step = self.prompts_per_step

        sampled_tokens = self.sampled_tokens

        samples_per_prompt = self.samples_per_prompt

        seconds_per_decode_row = self.seconds_per_decode_row

        seconds_per_decode_step = self.seconds_per_decode_step

        seconds_per_eval_prompt = self.seconds_per_eval_prompt

        seconds_per_grader_call = self.seconds_per_grader_call

        seconds_per_sampled_token = self.seconds_per_sampled_token

        seconds_per_trained_token = self.seconds_per_trained_token

        seconds_per_update_row = self.seconds_per_update_row

        seconds_per_update_row_token = self.seconds_per_update_row_token

        setup_seconds = self.setup_seconds

        steps = self.steps

        trained_tokens = self.trained_tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "completion_tokens_per_sample": completion_tokens_per_sample,
                "devices": devices,
                "evals": evals,
                "grader_calls": grader_calls,
                "overhead_seconds_per_step": overhead_seconds_per_step,
                "prompts_per_step": prompts_per_step,
                "sampled_tokens": sampled_tokens,
                "samples_per_prompt": samples_per_prompt,
                "seconds_per_decode_row": seconds_per_decode_row,
                "seconds_per_decode_step": seconds_per_decode_step,
                "seconds_per_eval_prompt": seconds_per_eval_prompt,
                "seconds_per_grader_call": seconds_per_grader_call,
                "seconds_per_sampled_token": seconds_per_sampled_token,
                "seconds_per_trained_token": seconds_per_trained_token,
                "seconds_per_update_row": seconds_per_update_row,
                "seconds_per_update_row_token": seconds_per_update_row_token,
                "setup_seconds": setup_seconds,
                "steps": steps,
                "trained_tokens": trained_tokens,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        completion_tokens_per_sample = d.pop("completion_tokens_per_sample")

        devices = d.pop("devices")

        evals = d.pop("evals")

        grader_calls = d.pop("grader_calls")

        overhead_seconds_per_step = d.pop("overhead_seconds_per_step")

        prompts_per_step = d.pop("prompts_per_step")

        sampled_tokens = d.pop("sampled_tokens")

        samples_per_prompt = d.pop("samples_per_prompt")

        seconds_per_decode_row = d.pop("seconds_per_decode_row")

        seconds_per_decode_step = d.pop("seconds_per_decode_step")

        seconds_per_eval_prompt = d.pop("seconds_per_eval_prompt")

        seconds_per_grader_call = d.pop("seconds_per_grader_call")

        seconds_per_sampled_token = d.pop("seconds_per_sampled_token")

        seconds_per_trained_token = d.pop("seconds_per_trained_token")

        seconds_per_update_row = d.pop("seconds_per_update_row")

        seconds_per_update_row_token = d.pop("seconds_per_update_row_token")

        setup_seconds = d.pop("setup_seconds")

        steps = d.pop("steps")

        trained_tokens = d.pop("trained_tokens")

        estimate_drivers = cls(
            completion_tokens_per_sample=completion_tokens_per_sample,
            devices=devices,
            evals=evals,
            grader_calls=grader_calls,
            overhead_seconds_per_step=overhead_seconds_per_step,
            prompts_per_step=prompts_per_step,
            sampled_tokens=sampled_tokens,
            samples_per_prompt=samples_per_prompt,
            seconds_per_decode_row=seconds_per_decode_row,
            seconds_per_decode_step=seconds_per_decode_step,
            seconds_per_eval_prompt=seconds_per_eval_prompt,
            seconds_per_grader_call=seconds_per_grader_call,
            seconds_per_sampled_token=seconds_per_sampled_token,
            seconds_per_trained_token=seconds_per_trained_token,
            seconds_per_update_row=seconds_per_update_row,
            seconds_per_update_row_token=seconds_per_update_row_token,
            setup_seconds=setup_seconds,
            steps=steps,
            trained_tokens=trained_tokens,
        )

        estimate_drivers.additional_properties = d
        return estimate_drivers

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
