"""Several graders -> one advantage per sample: weights, and the two published ways to combine them.

Scores come as a matrix R (N samples × K graders) with NaN where a grader returned None. As in TRL, a NaN means
"this grader does not apply to this sample": the weighted sum skips it (nansum), and only a sample that *no*
grader scored is unscorable (NaN total, advantage 0). A grader *error* (exception, timeout, non-number) is not a
NaN: it scores 0 and is counted per grader (OpenAI's rule; see grpo_core.rewards.graders).

- ``sum_then_normalize`` (GRPO, TRL's default): r = Σ_k w_k R_k, then the configured estimator/scale
  (grpo_core.rewards.advantages) on r.
- ``normalize_then_sum`` (GDPO; TRL's ``multi_objective_aggregation``): each grader is normalised within its group,
  R̂_k = (R_k − mean_g R_k) / (std_g R_k + 1e-4), summed with the weights, and the sum whitened over the batch:
  Â = (s − mean s) / (std s + 1e-4). It keeps a grader with a small range from being drowned by one with a large
  range; the estimator and ``scale_rewards`` do not apply (the config rejects combining them).

Shaping terms (DAPO's soft overlong punishment) enter as one more column of weight 1, so both modes treat them
like a grader. Error messages name the training file's row, so the user can find the input that broke a grader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.device import HOST
from grpo_core.rewards.advantages import STD_EPS, compute_advantages, nanstd
from grpo_core.rewards.base import Grader, GraderResult
from grpo_core.schemas.config import Estimator, RewardAggregation, Scale


@dataclass
class Scores:
    matrix: Tensor  # (N, K) float64, NaN where grader k does not apply to sample i (an error scores 0)
    names: list[str]  # the K grader names
    errors: list[str]  # messages naming the training row, for the job's events
    error_counts: dict[str, int] = field(default_factory=dict)  # per grader: samples whose scoring failed
    sub_scores: dict[str, list[float | None]] = field(default_factory=dict)  # "multi.part" -> scores (metrics)


def grade(
    graders: Sequence[Grader],
    texts: list[str],
    rows: list[dict[str, Any]],
    extras: list[dict[str, Any]] | None = None,
) -> list[GraderResult]:
    """Every grader's answer on every sample, as it returned it (one score per sample, checked); ``extras``: more
    of each sample for the graders (a multi-turn episode's conversation and tool calls)."""
    out = []
    for g in graders:
        res = g.score(texts, rows, extras) if extras is not None else g.score(texts, rows)
        if len(res.scores) != len(texts):
            raise ValueError(f"grader {g.name!r} returned {len(res.scores)} scores for {len(texts)} samples")
        out.append(res)
    return out


def scores_of(graders: Sequence[Grader], results: Sequence[GraderResult], row_numbers: list[int]) -> Scores:
    """The score matrix of ``grade``'s ``results`` (one per grader); ``row_numbers`` are 1-based training-file rows,
    one per sample, which the error messages name."""
    cols: list[Tensor] = []
    out = Scores(torch.zeros(0, device=HOST), [g.name for g in graders], [])
    for g, res in zip(graders, results, strict=True):
        reasons = res.errors or [None] * len(res.scores)
        failed = [f"grader {g.name!r} on training row {n}: {e}" for n, e in zip(row_numbers, reasons, strict=True) if e]
        out.errors += failed
        out.error_counts[g.name] = len(failed)
        out.sub_scores |= {f"{g.name}.{k}": v for k, v in res.sub_scores.items()}
        cols.append(torch.tensor([math.nan if s is None else s for s in res.scores], dtype=torch.float64, device=HOST))
    n = len(row_numbers)
    out.matrix = torch.stack(cols, dim=1) if cols else torch.zeros(n, 0, dtype=torch.float64, device=HOST)
    return out


def weighted_total(matrix: Tensor, weights: Sequence[float]) -> Tensor:
    """Σ_k w_k R_k over the graders that scored each sample; NaN only where none did. (N,) float32."""
    w = torch.tensor(list(weights), dtype=matrix.dtype, device=matrix.device)
    total = (matrix * w).nansum(dim=1)
    total[torch.isnan(matrix).all(dim=1)] = math.nan
    return total.float()


def combined_advantages(
    matrix: Tensor,
    weights: Sequence[float],
    group_size: int,
    *,
    aggregation: RewardAggregation = "sum_then_normalize",
    estimator: Estimator = "grpo",
    scale: Scale = "group",
) -> Tensor:
    """Advantages (N,) from a score matrix (N, K) and K weights, by ``aggregation`` (see module doc)."""
    if matrix.shape[1] != len(weights):
        raise ValueError(f"{len(weights)} weights for {matrix.shape[1]} reward columns")
    if aggregation == "sum_then_normalize":
        return compute_advantages(weighted_total(matrix, weights), group_size, estimator=estimator, scale=scale)
    if aggregation != "normalize_then_sum":
        raise ValueError(f"unknown reward aggregation {aggregation!r}")
    grouped = matrix.view(-1, group_size, matrix.shape[1])
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    norm = ((grouped - mean) / (nanstd(grouped, dim=1, keepdim=True) + STD_EPS)).view_as(matrix)
    s = weighted_total(norm.double(), weights).double()
    adv = (s - torch.nanmean(s)) / (nanstd(s) + STD_EPS)
    return torch.nan_to_num(adv, nan=0.0).float()
