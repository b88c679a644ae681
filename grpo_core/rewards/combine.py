"""Combining graders: the total reward of a sample is the sum of its graders' scores.

A sample any grader could not score gets NaN (unscorable: advantage 0, see grpo_core.advantages). Error messages
name the training file's row, so the user can find the input that broke their grader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from grpo_core.rewards.graders import Grader


def score_samples(
    graders: Sequence[Grader], texts: list[str], rows: list[dict[str, Any]], row_numbers: list[int]
) -> tuple[torch.Tensor, dict[str, list[float | None]], list[str]]:
    """Total reward per sample (NaN when any grader failed on it), per-grader scores, and error messages
    that name the training file's row (1-based ``row_numbers``), so the user can find the bad input."""
    per_grader: dict[str, list[float | None]] = {}
    errors: list[str] = []
    total = torch.zeros(len(texts), dtype=torch.float64)
    for g in graders:
        res = g.score(texts, rows)
        per_grader[g.name] = res.scores
        errors += [
            f"grader {g.name!r} on training row {n}: {e}" for n, e in zip(row_numbers, res.errors, strict=True) if e
        ]
        total += torch.tensor([math.nan if s is None else s for s in res.scores], dtype=torch.float64)
    return total.float(), per_grader, errors
