"""One step's metrics (grpo_core.schemas.metrics.StepMetrics) from what the step produced.

The names and their meaning are documented on the schema; this module only computes them from the step's batch
(grpo_core.rollout.sampling.StepBatch: rollouts, rewards, advantages, SamplingStats) and the update's sums
(grpo_core.update.tally.UpdateSums): per-token means are over the tokens that were updated, so a micro-batch split
never changes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from grpo_core.rewards.advantages import zero_std_fraction
from grpo_core.rollout.pipeline import staleness_histogram
from grpo_core.rollout.sampling import StepBatch
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.metrics import (
    EpisodeStats,
    GraderErrorRate,
    GraderMetrics,
    OffPolicyStats,
    Sample,
    Scores,
    StepErrors,
    StepMetrics,
    StepTiming,
    Timing,
    TrajectorySpan,
)
from grpo_core.update.tally import UpdateSums


def step_metrics(
    cfg: GRPOConfig,
    *,
    step: int,
    total: int,
    batch: StepBatch,
    rows: list[dict[str, Any]],
    sums: UpdateSums,
    grad_norm: float,
    lr: float,
    times: tuple[float, float, float],
    dropped: int = 0,
    decode: Callable[[list[int]], str] | None = None,
) -> StepMetrics:
    """The step's metrics; ``times``: the step's start, when its batch was ready, its end; ``dropped``: samples
    older than max_staleness left out of the batch; ``decode`` (token ids -> text) shows a logged multi-turn episode
    turn by turn."""
    t0, t1, t2 = times
    g = cfg.group_size
    ro, rewards, adv = batch.ro, batch.rewards, batch.adv
    valid = rewards[~torch.isnan(rewards)]
    lengths = ro.completion_mask.sum(dim=1)
    updated = max(sums.updated_tokens, 1.0)
    st = batch.stats
    zero_std = zero_std_fraction(rewards, g)
    if cfg.dynamic_sampling:  # the trained batch was filtered: report the share among what was sampled
        zero_std = st.groups_dropped / max(st.groups_sampled, 1)
    graders = [
        GraderMetrics(
            name=name,
            train_reward_mean=_nanmean(batch.scores[:, k]),
            train_reward_std=_nanstd(batch.scores[:, k]),
            error_rate=batch.error_rates.get(name, 0.0),
            not_applicable_rate=float(torch.isnan(batch.scores[:, k]).float().mean()),
        )
        for k, name in enumerate(batch.grader_names)
    ] + [GraderMetrics(name=name, train_reward_mean=mean) for name, mean in batch.sub_scores.items()]
    is_weight_sum = sums.is_weight_sum  # a separate engine's log-probs differ from the trainer's (rounding, kernels)
    return StepMetrics(
        step=step,
        total_steps=total,
        scores=Scores(train_reward_mean=float(valid.mean()) if valid.numel() else None, graders=graders),
        errors=StepErrors(
            graders=[
                GraderErrorRate(name=m.name, train_error_rate=m.error_rate) for m in graders if m.error_rate is not None
            ],
            samples=batch.errors[:3],
        ),
        timing=Timing(
            step=StepTiming(
                sampling=round(batch.sampling_seconds, 3),
                scoring=round(batch.scoring_seconds, 3),
                training=round(t2 - t1, 3),
                full_iteration=round(t2 - t0, 3),
                waiting=round(t1 - t0, 3) if cfg.max_staleness else None,
            )
        ),
        train_reward_std=float(valid.std()) if valid.numel() > 1 else 0.0,
        frac_reward_zero_std=zero_std,
        loss=sums.loss,
        kl=sums.kl_sum / updated if cfg.beta > 0 else None,
        entropy=sums.entropy_sum / updated,
        clip_ratio=sums.clipped_tokens / updated,
        clip_ratio_low=sums.clipped_low_tokens / updated,
        clip_ratio_high=sums.clipped_high_tokens / updated,
        tokens_per_second=round(float(lengths.sum()) / max(t2 - t0, 1e-9), 1),
        grad_norm=grad_norm,
        learning_rate=lr,
        completion_length_mean=float(lengths.float().mean()),
        completion_length_min=int(lengths.min()),
        completion_length_max=int(lengths.max()),
        truncated_ratio=float(ro.truncated.float().mean()),
        overlong_penalty_mean=float(batch.overlong.mean()),
        advantage_mean=float(adv.mean()),
        advantage_std=float(adv.std()) if adv.numel() > 1 else 0.0,
        tokens=int(lengths.sum()),
        sampling=st.model_copy(),
        samples=[_sample(batch, rows, i, g, lengths, decode) for i in range(min(cfg.sample_log_count, len(ro.texts)))],
        importance_sampling_ratio_mean=is_weight_sum / updated if is_weight_sum is not None else None,
        sampling_logp_difference_max=sums.logp_diff_max if is_weight_sum is not None else None,
        episodes=episode_stats(ro.episodes) if ro.episodes is not None else None,
        off_policy=_off_policy(cfg, step, batch, sums, dropped, updated),
    )


def _off_policy(
    cfg: GRPOConfig, step: int, batch: StepBatch, sums: UpdateSums, dropped: int, updated: float
) -> OffPolicyStats | None:
    """The sampler/trainer gap of the step (grpo_core.update.correction); None when the trainer's own forward
    sampled (nothing to correct or measure)."""
    if sums.is_weight_sum is None:
        return None
    versions = batch.ro.versions
    lags = staleness_histogram(versions, step) if versions is not None else {"0": len(batch.ro.texts)}
    return OffPolicyStats(
        max_staleness=cfg.max_staleness,
        staleness=lags,
        stale_samples_dropped=dropped,
        mismatch_kl=(sums.mismatch_kl_sum or 0.0) / updated,
        is_weight_mean=sums.is_weight_sum / updated,
        is_weight_max=sums.is_weight_max or 0.0,
        bounded_share=(sums.is_bounded_tokens or 0.0) / updated,
    )


def episode_stats(episodes: list[Any]) -> EpisodeStats:
    """The step's multi-turn numbers (grpo_core.rollout.agent.episodes.Episode)."""
    n = max(len(episodes), 1)
    calls = sum(e.tool_calls for e in episodes)
    seconds = [s for e in episodes for s in e.tool_seconds]
    return EpisodeStats(
        turns_mean=sum(e.turns for e in episodes) / n,
        turns_max=max((e.turns for e in episodes), default=0),
        tool_calls_mean=calls / n,
        tool_error_rate=sum(e.tool_errors for e in episodes) / max(calls, 1),
        tool_call_errors=sum(e.call_errors for e in episodes),
        tool_seconds_mean=sum(seconds) / len(seconds) if seconds else None,
        tool_seconds_max=max(seconds) if seconds else None,
        truncated_rate=sum(e.truncated for e in episodes) / n,
        environment_tokens_mean=sum(len(e.mask) - sum(e.mask) for e in episodes) / n,
    )


def _trajectory(episode: Any, decode: Callable[[list[int]], str]) -> list[TrajectorySpan]:
    return [
        TrajectorySpan(kind=kind, text=decode(episode.tokens[a:b]), tokens=b - a, trained=kind == "model")
        for a, b, kind in episode.spans
    ]


def _sample(
    batch: StepBatch,
    rows: list[dict[str, Any]],
    i: int,
    group_size: int,
    lengths: Tensor,
    decode: Callable[[list[int]], str] | None = None,
) -> Sample:
    """Rollout ``i`` of the step, for the logged samples (``decode``: token ids -> text, for a trajectory)."""
    row = rows[batch.row_idx[i // group_size]]
    episode = batch.ro.episodes[i] if batch.ro.episodes is not None else None
    return Sample(
        prompt=row.get("prompt", row.get("messages")),
        completion=batch.ro.texts[i],
        reward=_finite_or_none(batch.rewards[i]),
        rewards={name: _finite_or_none(batch.scores[i, k]) for k, name in enumerate(batch.grader_names)},
        advantage=float(batch.adv[i]),
        completion_tokens=int(lengths[i]),
        policy_version=int(batch.ro.versions[i]) if batch.ro.versions is not None else None,
        trajectory=_trajectory(episode, decode) if episode is not None and decode is not None else None,
        ended=episode.ended if episode is not None else None,
    )


def _finite_or_none(x: Tensor) -> float | None:
    return None if math.isnan(float(x)) else float(x)


def _nanstd(x: Tensor) -> float | None:
    vals = x[~torch.isnan(x)]
    return float(vals.std()) if vals.numel() > 1 else None


def _nanmean(x: Tensor) -> float | None:
    vals = x[~torch.isnan(x)]
    return float(vals.mean()) if vals.numel() else None
