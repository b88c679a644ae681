"""The per-step metrics dict the trainer reports (names documented here; the worker forwards them as events).

train_reward_mean/std       total reward (weighted grader sum, shaping included) over scorable samples
graders.{name}              per-grader train_reward_mean/std, error_rate (share of samples whose scoring failed:
                            scored 0) and not_applicable_rate (returned None); a multi's parts as {name}.{part}
valid_reward_mean           validation: mean weighted reward (every eval_interval steps and after the last)
valid_pass_at_k             validation: mean over prompts of the best of eval_samples rewards (pass@k for 0/1)
frac_reward_zero_std        share of groups whose rewards are all equal (no learning signal); with dynamic sampling,
                            the share of sampled groups dropped for it
advantage_mean/std          over all samples of the step
loss                        the step's loss (last of the μ updates)
kl, entropy                 per-token means over the updated sequences (kl is None when β = 0)
clip_ratio[_low|_high]      share of updated tokens whose ratio was clipped (low: Â < 0, high: Â > 0)
grad_norm, learning_rate    before clipping; the scheduler's current rate
completion_length_*         tokens up to and including EOS; truncated_ratio: no EOS within the cap
overlong_penalty_mean       DAPO's soft overlong punishment, when enabled
tokens, tokens_per_second   completion tokens of the step, and per wall-clock second of the whole step
timing.{sampling, scoring, training, full_iteration}   seconds (training includes the engine sync)
sampling.{sampling_rounds, groups_sampled, groups_dropped, groups_trained}   dynamic sampling / GFPO bookkeeping
importance_sampling_ratio_mean, sampling_logp_difference_max   vLLM engine only: TIS weight, max |Δ log p|
samples                     the first ``sample_log_count`` rollouts: prompt, completion, total and per-grader
                            rewards, advantage, completion tokens
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from grpo_core.advantages import zero_std_fraction
from grpo_core.config import GRPOConfig
from grpo_core.sampling import StepBatch


def step_metrics(
    cfg: GRPOConfig,
    *,
    step: int,
    total: int,
    batch: StepBatch,
    rows: list[dict[str, Any]],
    sums: dict[str, float],
    grad_norm: float,
    lr: float,
    times: tuple[float, float, float],
) -> dict[str, Any]:
    t0, t1, t2 = times
    g = cfg.group_size
    ro, rewards, adv = batch.ro, batch.rewards, batch.adv
    valid = rewards[~torch.isnan(rewards)]
    lengths = ro.completion_mask.sum(dim=1)
    updated = max(sums["updated_tokens"], 1.0)
    st = batch.stats
    zero_std = zero_std_fraction(rewards, g)
    if cfg.dynamic_sampling:  # the trained batch was filtered: report the share among what was sampled
        zero_std = st["groups_dropped"] / max(st["groups_sampled"], 1)
    out: dict[str, Any] = {
        "step": step,
        "total_steps": total,
        "train_reward_mean": float(valid.mean()) if valid.numel() else math.nan,
        "train_reward_std": float(valid.std()) if valid.numel() > 1 else 0.0,
        "graders": {
            name: {
                "train_reward_mean": _nanmean(batch.scores[:, k]),
                "train_reward_std": _nanstd(batch.scores[:, k]),
                "error_rate": batch.error_rates.get(name, 0.0),
                "not_applicable_rate": float(torch.isnan(batch.scores[:, k]).float().mean()),
            }
            for k, name in enumerate(batch.grader_names)
        }
        | {name: {"train_reward_mean": mean} for name, mean in batch.sub_scores.items()},
        "frac_reward_zero_std": zero_std,
        "loss": sums["loss"],
        "kl": sums.get("kl_sum", 0.0) / updated if cfg.beta > 0 else None,
        "entropy": sums.get("entropy_sum", 0.0) / updated,
        "clip_ratio": sums.get("clipped_tokens", 0.0) / updated,
        "clip_ratio_low": sums.get("clipped_low_tokens", 0.0) / updated,
        "clip_ratio_high": sums.get("clipped_high_tokens", 0.0) / updated,
        "tokens_per_second": round(float(lengths.sum()) / max(t2 - t0, 1e-9), 1),
        "grad_norm": grad_norm,
        "learning_rate": lr,
        "completion_length_mean": float(lengths.float().mean()),
        "completion_length_min": int(lengths.min()),
        "completion_length_max": int(lengths.max()),
        "overlong_penalty_mean": float(batch.overlong.mean()),
        "advantage_mean": float(adv.mean()),
        "advantage_std": float(adv.std()) if adv.numel() > 1 else 0.0,
        "truncated_ratio": float(ro.truncated.float().mean()),
        "tokens": int(lengths.sum()),
        "sampling": {k: int(st[k]) for k in ("sampling_rounds", "groups_sampled", "groups_dropped", "groups_trained")},
        "timing": {
            "sampling": round(st["sampling"], 3),
            "scoring": round(st["scoring"], 3),
            "training": round(t2 - t1, 3),
            "full_iteration": round(t2 - t0, 3),
        },
        "samples": [
            {
                "prompt": rows[batch.row_idx[i // g]].get("prompt", rows[batch.row_idx[i // g]].get("messages")),
                "completion": ro.texts[i],
                "reward": None if math.isnan(float(rewards[i])) else float(rewards[i]),
                "rewards": {
                    name: None if math.isnan(float(batch.scores[i, k])) else float(batch.scores[i, k])
                    for k, name in enumerate(batch.grader_names)
                },
                "advantage": float(adv[i]),
                "completion_tokens": int(lengths[i]),
            }
            for i in range(min(cfg.sample_log_count, len(ro.texts)))
        ],
        "grader_errors": batch.errors[:3],
    }
    if "is_weight_sum" in sums:  # a separate sampling engine: how far its log-probs are from the trainer's
        out["importance_sampling_ratio_mean"] = sums["is_weight_sum"] / updated
        out["sampling_logp_difference_max"] = sums["logp_diff_max"]
    return out


def _nanstd(x: Tensor) -> float | None:
    vals = x[~torch.isnan(x)]
    return float(vals.std()) if vals.numel() > 1 else None


def _nanmean(x: Tensor) -> float | None:
    vals = x[~torch.isnan(x)]
    return float(vals.mean()) if vals.numel() else None
