"""Sample and score, written once: G samples of each prompt from a rollout engine (or the job's agent), every one
scored by every grader, and their weighted total.

Every caller that draws scored samples goes through ``sample_and_score``: a training step's batch
(grpo_core.rollout.sampling.collect_batch, each rank its share of the prompts), and the policy sessions of
grpo_core.policy (the trainer's validation, the readiness probe, eval runs). The sampling noise is keyed by the
``Sampling`` alone (its seed and ``first_row``), so the same draw gives the same samples wherever it is made.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from grpo_core.rewards.base import Grader, GraderResult
from grpo_core.rewards.combine import Scores, grade, scores_of, weighted_total
from grpo_core.rollout.agent.episodes import AgentRollouts
from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import RolloutEngine, Sampling


@dataclass
class ScoredSamples:
    """One batch of prompts sampled ``k`` times each and scored: sample i belongs to prompt i // k. N = prompts × k.
    The per-sample lists are computed from the rollout once (an eval reads them once per item)."""

    rollout: Rollout  # N rows, grouped by prompt; ``episodes`` set for multi-turn samples
    graded: list[GraderResult]  # per grader, as it answered: N scores (None: not applicable) and per-sample errors
    scores: Scores  # (N, K) float64 matrix, NaN where a grader did not apply; errors naming the rows
    rewards: Tensor  # (N,) float32 weighted grader total, NaN where no grader applied
    sampling_seconds: float
    grading_seconds: float

    @property
    def texts(self) -> list[str]:
        """The completions (a multi-turn sample: the last assistant message), special tokens stripped."""
        return self.rollout.texts

    @functools.cached_property
    def prompt_tokens(self) -> list[int]:
        return [int(n) for n in self.rollout.prompt_mask.sum(dim=1).tolist()]

    @functools.cached_property
    def completion_tokens(self) -> list[int]:
        """Tokens the model sampled per sample, up to and including its end-of-sequence token."""
        return [int(n) for n in self.rollout.completion_mask.sum(dim=1).tolist()]

    @functools.cached_property
    def truncated(self) -> list[bool]:
        """Whether the sample hit its token budget before an end-of-sequence token (finish reason ``length``)."""
        return [bool(b) for b in self.rollout.truncated.tolist()]


def sample_and_score(
    engine: RolloutEngine,
    prompts: list[str],
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    sampling: Sampling,
    *,
    weights: Sequence[float] | None = None,
    row_numbers: list[int] | None = None,
    agent: AgentRollouts | None = None,
) -> ScoredSamples:
    """``sampling.group_size`` samples of each prompt (``rows[i]`` is prompt i's dataset row, what the graders see),
    every one scored by every grader, and their weighted total (``weights``: one per grader, default 1 each).

    ``agent``: the job's environment; each sample is then a multi-turn episode sampled by the agent's engine.
    ``row_numbers``: one per prompt, the 1-based row its grader errors name (default: its place in ``rows``).
    The sampling noise is keyed by ``sampling`` alone (its seed and ``first_row``), so a caller that draws the
    same batch with the same ``Sampling`` gets the same samples."""
    k = sampling.group_size
    t0 = time.perf_counter()
    with torch.no_grad():
        ro = agent.run(prompts, rows, sampling) if agent is not None else engine.generate(prompts, sampling)
    t1 = time.perf_counter()
    items = [r for r in rows for _ in range(k)]
    numbers = [n for n in (row_numbers or range(1, len(rows) + 1)) for _ in range(k)]
    extras = [e.grader_view() for e in ro.episodes] if ro.episodes is not None else None
    graded = grade(graders, ro.texts, items, extras)
    scores = scores_of(graders, graded, numbers)
    t2 = time.perf_counter()
    rewards = weighted_total(scores.matrix, list(weights) if weights else [1.0] * len(graders))
    return ScoredSamples(ro, graded, scores, rewards, sampling_seconds=t1 - t0, grading_seconds=t2 - t1)
