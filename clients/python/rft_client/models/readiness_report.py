# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.readiness_report_verdict import ReadinessReportVerdict, check_readiness_report_verdict

if TYPE_CHECKING:
    from ..models.prompt_outcome import PromptOutcome


T = TypeVar("T", bound="ReadinessReport")


@_attrs_define
class ReadinessReport:
    """What the base model does on the task before any training, and what it means for GRPO.

    Attributes:
        always_fail_share (float): Share of prompts whose every sample has the same failing reward.
        always_pass_share (float): Share of prompts whose every sample has the same passing reward.
        completion_tokens_mean (float):
        completion_tokens_p95 (int):
        findings (list[str]): What the figures mean, each with its remedy; the first sums up.
        grader_error_rate (float):
        grader_ms_per_sample (float):
        histogram (list[int]): Prompts by how many of their k samples passed: index 0 … k.
        max_completion_tokens (int):
        mean_reward (float | None):
        outcomes (list[PromptOutcome]):
        pass_threshold (float):
        prompts (int):
        samples_per_prompt (int):
        signal_share (float): Share of prompts whose rewards differ within the group.
        truncated_share (float):
        verdict (ReadinessReportVerdict):
    """

    always_fail_share: float
    always_pass_share: float
    completion_tokens_mean: float
    completion_tokens_p95: int
    findings: list[str]
    grader_error_rate: float
    grader_ms_per_sample: float
    histogram: list[int]
    max_completion_tokens: int
    mean_reward: float | None
    outcomes: list[PromptOutcome]
    pass_threshold: float
    prompts: int
    samples_per_prompt: int
    signal_share: float
    truncated_share: float
    verdict: ReadinessReportVerdict
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        always_fail_share = self.always_fail_share

        always_pass_share = self.always_pass_share

        completion_tokens_mean = self.completion_tokens_mean

        completion_tokens_p95 = self.completion_tokens_p95

        findings = self.findings

        grader_error_rate = self.grader_error_rate

        grader_ms_per_sample = self.grader_ms_per_sample

        histogram = self.histogram

        max_completion_tokens = self.max_completion_tokens

        mean_reward: float | None
        mean_reward = self.mean_reward

        outcomes = []
        for outcomes_item_data in self.outcomes:
            outcomes_item = outcomes_item_data.to_dict()
            outcomes.append(outcomes_item)

        pass_threshold = self.pass_threshold

        prompts = self.prompts

        samples_per_prompt = self.samples_per_prompt

        signal_share = self.signal_share

        truncated_share = self.truncated_share

        verdict: str = self.verdict

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "always_fail_share": always_fail_share,
                "always_pass_share": always_pass_share,
                "completion_tokens_mean": completion_tokens_mean,
                "completion_tokens_p95": completion_tokens_p95,
                "findings": findings,
                "grader_error_rate": grader_error_rate,
                "grader_ms_per_sample": grader_ms_per_sample,
                "histogram": histogram,
                "max_completion_tokens": max_completion_tokens,
                "mean_reward": mean_reward,
                "outcomes": outcomes,
                "pass_threshold": pass_threshold,
                "prompts": prompts,
                "samples_per_prompt": samples_per_prompt,
                "signal_share": signal_share,
                "truncated_share": truncated_share,
                "verdict": verdict,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.prompt_outcome import PromptOutcome  # noqa: PLC0415

        d = dict(src_dict)
        always_fail_share = d.pop("always_fail_share")

        always_pass_share = d.pop("always_pass_share")

        completion_tokens_mean = d.pop("completion_tokens_mean")

        completion_tokens_p95 = d.pop("completion_tokens_p95")

        findings = cast(list[str], d.pop("findings"))

        grader_error_rate = d.pop("grader_error_rate")

        grader_ms_per_sample = d.pop("grader_ms_per_sample")

        histogram = cast(list[int], d.pop("histogram"))

        max_completion_tokens = d.pop("max_completion_tokens")

        def _parse_mean_reward(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        mean_reward = _parse_mean_reward(d.pop("mean_reward"))

        outcomes = []
        _outcomes = d.pop("outcomes")
        for outcomes_item_data in _outcomes:
            outcomes_item = PromptOutcome.from_dict(outcomes_item_data)

            outcomes.append(outcomes_item)

        pass_threshold = d.pop("pass_threshold")

        prompts = d.pop("prompts")

        samples_per_prompt = d.pop("samples_per_prompt")

        signal_share = d.pop("signal_share")

        truncated_share = d.pop("truncated_share")

        verdict = check_readiness_report_verdict(d.pop("verdict"))

        readiness_report = cls(
            always_fail_share=always_fail_share,
            always_pass_share=always_pass_share,
            completion_tokens_mean=completion_tokens_mean,
            completion_tokens_p95=completion_tokens_p95,
            findings=findings,
            grader_error_rate=grader_error_rate,
            grader_ms_per_sample=grader_ms_per_sample,
            histogram=histogram,
            max_completion_tokens=max_completion_tokens,
            mean_reward=mean_reward,
            outcomes=outcomes,
            pass_threshold=pass_threshold,
            prompts=prompts,
            samples_per_prompt=samples_per_prompt,
            signal_share=signal_share,
            truncated_share=truncated_share,
            verdict=verdict,
        )

        readiness_report.additional_properties = d
        return readiness_report

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
