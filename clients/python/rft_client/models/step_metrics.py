# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.episode_stats import EpisodeStats
    from ..models.memory_stats import MemoryStats
    from ..models.off_policy_stats import OffPolicyStats
    from ..models.sample import Sample
    from ..models.sampling_stats import SamplingStats
    from ..models.scores import Scores
    from ..models.step_errors import StepErrors
    from ..models.timing import Timing


T = TypeVar("T", bound="StepMetrics")


@_attrs_define
class StepMetrics:
    """One optimizer step. ``kl`` is null when β = 0; per-token means are over the tokens that were updated.

    Attributes:
        advantage_mean (float):
        advantage_std (float):
        clip_ratio (float): Share of updated tokens whose ratio was clipped.
        clip_ratio_high (float): ... clipped at 1 + epsilon_high (positive advantage).
        clip_ratio_low (float): ... clipped at 1 - epsilon (negative advantage).
        completion_length_max (int):
        completion_length_mean (float):
        completion_length_min (int):
        entropy (float): Mean per-token entropy of the policy.
        frac_reward_zero_std (float): Share of groups whose rewards are all equal (no learning signal); with dynamic
            sampling, the share of sampled groups dropped for it.
        grad_norm (float): Global gradient norm before clipping.
        kl (float | None): Mean per-token KL to the base model; null when beta is 0.
        learning_rate (float): The scheduler's current rate.
        loss (float): The step's loss (the last of the num_iterations updates).
        overlong_penalty_mean (float): DAPO's soft overlong punishment (0 when off).
        sampling (SamplingStats): Dynamic sampling and GFPO bookkeeping: how many groups were sampled, dropped for no
            signal, trained on.
        scores (Scores):
        step (int):
        timing (Timing):
        tokens (int): Completion tokens sampled in the step.
        tokens_per_second (float): Completion tokens per wall-clock second of the whole step.
        total_steps (int):
        train_reward_std (float):
        truncated_ratio (float): Share of completions with no EOS within max_completion_tokens.
        episodes (EpisodeStats | None | Unset): Multi-turn episodes (jobs with an environment).
        errors (StepErrors | Unset):
        importance_sampling_ratio_mean (float | None | Unset): Separate sampling engine only: mean truncated importance
            weight π_trainer/π_engine.
        memory (MemoryStats | None | Unset): Peak memory of the step.
        off_policy (None | OffPolicyStats | Unset): Sampler/trainer mismatch and staleness; null when the trainer's own
            forward sampled.
        samples (list[Sample] | Unset): The first sample_log_count rollouts.
        sampling_logp_difference_max (float | None | Unset): Separate sampling engine only: largest |log π_trainer − log
            π_engine| of a token.
        warnings (list[str] | Unset): Health warnings raised at this step.
    """

    advantage_mean: float
    advantage_std: float
    clip_ratio: float
    clip_ratio_high: float
    clip_ratio_low: float
    completion_length_max: int
    completion_length_mean: float
    completion_length_min: int
    entropy: float
    frac_reward_zero_std: float
    grad_norm: float
    kl: float | None
    learning_rate: float
    loss: float
    overlong_penalty_mean: float
    sampling: SamplingStats
    scores: Scores
    step: int
    timing: Timing
    tokens: int
    tokens_per_second: float
    total_steps: int
    train_reward_std: float
    truncated_ratio: float
    episodes: EpisodeStats | None | Unset = UNSET
    errors: StepErrors | Unset = UNSET
    importance_sampling_ratio_mean: float | None | Unset = UNSET
    memory: MemoryStats | None | Unset = UNSET
    off_policy: None | OffPolicyStats | Unset = UNSET
    samples: list[Sample] | Unset = UNSET
    sampling_logp_difference_max: float | None | Unset = UNSET
    warnings: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.episode_stats import EpisodeStats  # noqa: PLC0415
        from ..models.memory_stats import MemoryStats  # noqa: PLC0415
        from ..models.off_policy_stats import OffPolicyStats  # noqa: PLC0415

        advantage_mean = self.advantage_mean

        advantage_std = self.advantage_std

        clip_ratio = self.clip_ratio

        clip_ratio_high = self.clip_ratio_high

        clip_ratio_low = self.clip_ratio_low

        completion_length_max = self.completion_length_max

        completion_length_mean = self.completion_length_mean

        completion_length_min = self.completion_length_min

        entropy = self.entropy

        frac_reward_zero_std = self.frac_reward_zero_std

        grad_norm = self.grad_norm

        kl: float | None
        kl = self.kl

        learning_rate = self.learning_rate

        loss = self.loss

        overlong_penalty_mean = self.overlong_penalty_mean

        sampling = self.sampling.to_dict()

        scores = self.scores.to_dict()

        step = self.step

        timing = self.timing.to_dict()

        tokens = self.tokens

        tokens_per_second = self.tokens_per_second

        total_steps = self.total_steps

        train_reward_std = self.train_reward_std

        truncated_ratio = self.truncated_ratio

        episodes: dict[str, Any] | None | Unset
        if isinstance(self.episodes, Unset):
            episodes = UNSET
        elif isinstance(self.episodes, EpisodeStats):
            episodes = self.episodes.to_dict()
        else:
            episodes = self.episodes

        errors: dict[str, Any] | Unset = UNSET
        if not isinstance(self.errors, Unset):
            errors = self.errors.to_dict()

        importance_sampling_ratio_mean: float | None | Unset
        if isinstance(self.importance_sampling_ratio_mean, Unset):
            importance_sampling_ratio_mean = UNSET
        else:
            importance_sampling_ratio_mean = self.importance_sampling_ratio_mean

        memory: dict[str, Any] | None | Unset
        if isinstance(self.memory, Unset):
            memory = UNSET
        elif isinstance(self.memory, MemoryStats):
            memory = self.memory.to_dict()
        else:
            memory = self.memory

        off_policy: dict[str, Any] | None | Unset
        if isinstance(self.off_policy, Unset):
            off_policy = UNSET
        elif isinstance(self.off_policy, OffPolicyStats):
            off_policy = self.off_policy.to_dict()
        else:
            off_policy = self.off_policy

        samples: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.samples, Unset):
            samples = []
            for samples_item_data in self.samples:
                samples_item = samples_item_data.to_dict()
                samples.append(samples_item)

        sampling_logp_difference_max: float | None | Unset
        if isinstance(self.sampling_logp_difference_max, Unset):
            sampling_logp_difference_max = UNSET
        else:
            sampling_logp_difference_max = self.sampling_logp_difference_max

        warnings: list[str] | Unset = UNSET
        if not isinstance(self.warnings, Unset):
            warnings = self.warnings

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "advantage_mean": advantage_mean,
                "advantage_std": advantage_std,
                "clip_ratio": clip_ratio,
                "clip_ratio_high": clip_ratio_high,
                "clip_ratio_low": clip_ratio_low,
                "completion_length_max": completion_length_max,
                "completion_length_mean": completion_length_mean,
                "completion_length_min": completion_length_min,
                "entropy": entropy,
                "frac_reward_zero_std": frac_reward_zero_std,
                "grad_norm": grad_norm,
                "kl": kl,
                "learning_rate": learning_rate,
                "loss": loss,
                "overlong_penalty_mean": overlong_penalty_mean,
                "sampling": sampling,
                "scores": scores,
                "step": step,
                "timing": timing,
                "tokens": tokens,
                "tokens_per_second": tokens_per_second,
                "total_steps": total_steps,
                "train_reward_std": train_reward_std,
                "truncated_ratio": truncated_ratio,
            }
        )
        if episodes is not UNSET:
            field_dict["episodes"] = episodes
        if errors is not UNSET:
            field_dict["errors"] = errors
        if importance_sampling_ratio_mean is not UNSET:
            field_dict["importance_sampling_ratio_mean"] = importance_sampling_ratio_mean
        if memory is not UNSET:
            field_dict["memory"] = memory
        if off_policy is not UNSET:
            field_dict["off_policy"] = off_policy
        if samples is not UNSET:
            field_dict["samples"] = samples
        if sampling_logp_difference_max is not UNSET:
            field_dict["sampling_logp_difference_max"] = sampling_logp_difference_max
        if warnings is not UNSET:
            field_dict["warnings"] = warnings

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.episode_stats import EpisodeStats  # noqa: PLC0415
        from ..models.memory_stats import MemoryStats  # noqa: PLC0415
        from ..models.off_policy_stats import OffPolicyStats  # noqa: PLC0415
        from ..models.sample import Sample  # noqa: PLC0415
        from ..models.sampling_stats import SamplingStats  # noqa: PLC0415
        from ..models.scores import Scores  # noqa: PLC0415
        from ..models.step_errors import StepErrors  # noqa: PLC0415
        from ..models.timing import Timing  # noqa: PLC0415

        d = dict(src_dict)
        advantage_mean = d.pop("advantage_mean")

        advantage_std = d.pop("advantage_std")

        clip_ratio = d.pop("clip_ratio")

        clip_ratio_high = d.pop("clip_ratio_high")

        clip_ratio_low = d.pop("clip_ratio_low")

        completion_length_max = d.pop("completion_length_max")

        completion_length_mean = d.pop("completion_length_mean")

        completion_length_min = d.pop("completion_length_min")

        entropy = d.pop("entropy")

        frac_reward_zero_std = d.pop("frac_reward_zero_std")

        grad_norm = d.pop("grad_norm")

        def _parse_kl(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        kl = _parse_kl(d.pop("kl"))

        learning_rate = d.pop("learning_rate")

        loss = d.pop("loss")

        overlong_penalty_mean = d.pop("overlong_penalty_mean")

        sampling = SamplingStats.from_dict(d.pop("sampling"))

        scores = Scores.from_dict(d.pop("scores"))

        step = d.pop("step")

        timing = Timing.from_dict(d.pop("timing"))

        tokens = d.pop("tokens")

        tokens_per_second = d.pop("tokens_per_second")

        total_steps = d.pop("total_steps")

        train_reward_std = d.pop("train_reward_std")

        truncated_ratio = d.pop("truncated_ratio")

        def _parse_episodes(data: object) -> EpisodeStats | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                episodes_type_0 = EpisodeStats.from_dict(data)

                return episodes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EpisodeStats | None | Unset, data)

        episodes = _parse_episodes(d.pop("episodes", UNSET))

        _errors = d.pop("errors", UNSET)
        errors: StepErrors | Unset
        if isinstance(_errors, Unset):
            errors = UNSET
        else:
            errors = StepErrors.from_dict(_errors)

        def _parse_importance_sampling_ratio_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        importance_sampling_ratio_mean = _parse_importance_sampling_ratio_mean(
            d.pop("importance_sampling_ratio_mean", UNSET)
        )

        def _parse_memory(data: object) -> MemoryStats | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                memory_type_0 = MemoryStats.from_dict(data)

                return memory_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MemoryStats | None | Unset, data)

        memory = _parse_memory(d.pop("memory", UNSET))

        def _parse_off_policy(data: object) -> None | OffPolicyStats | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                off_policy_type_0 = OffPolicyStats.from_dict(data)

                return off_policy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OffPolicyStats | Unset, data)

        off_policy = _parse_off_policy(d.pop("off_policy", UNSET))

        _samples = d.pop("samples", UNSET)
        samples: list[Sample] | Unset = UNSET
        if _samples is not UNSET:
            samples = []
            for samples_item_data in _samples:
                samples_item = Sample.from_dict(samples_item_data)

                samples.append(samples_item)

        def _parse_sampling_logp_difference_max(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        sampling_logp_difference_max = _parse_sampling_logp_difference_max(d.pop("sampling_logp_difference_max", UNSET))

        warnings = cast(list[str], d.pop("warnings", UNSET))

        step_metrics = cls(
            advantage_mean=advantage_mean,
            advantage_std=advantage_std,
            clip_ratio=clip_ratio,
            clip_ratio_high=clip_ratio_high,
            clip_ratio_low=clip_ratio_low,
            completion_length_max=completion_length_max,
            completion_length_mean=completion_length_mean,
            completion_length_min=completion_length_min,
            entropy=entropy,
            frac_reward_zero_std=frac_reward_zero_std,
            grad_norm=grad_norm,
            kl=kl,
            learning_rate=learning_rate,
            loss=loss,
            overlong_penalty_mean=overlong_penalty_mean,
            sampling=sampling,
            scores=scores,
            step=step,
            timing=timing,
            tokens=tokens,
            tokens_per_second=tokens_per_second,
            total_steps=total_steps,
            train_reward_std=train_reward_std,
            truncated_ratio=truncated_ratio,
            episodes=episodes,
            errors=errors,
            importance_sampling_ratio_mean=importance_sampling_ratio_mean,
            memory=memory,
            off_policy=off_policy,
            samples=samples,
            sampling_logp_difference_max=sampling_logp_difference_max,
            warnings=warnings,
        )

        step_metrics.additional_properties = d
        return step_metrics

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
