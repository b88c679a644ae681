"""Mean reward of a model on held-out rows: the number that says whether training helped.

Run by the trainer every ``eval_interval`` steps on the validation file (each rank scores its share of the rows),
and by the benches on a model they loaded; it samples exactly like training does (same prompt formatting, same
graders), in batches, through grpo_core.rollout.scored.sample_and_score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from grpo_core.policy import prompts_of
from grpo_core.rewards.base import Grader
from grpo_core.rollout.agent.episodes import AgentRollouts
from grpo_core.rollout.engines.base import RolloutEngine, Sampling
from grpo_core.rollout.engines.hf import TransformersEngine
from grpo_core.rollout.scored import sample_and_score


def evaluate_rewards(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    **kw: Any,
) -> tuple[float, float]:
    """(mean reward over every sample, mean over prompts of the best of its k samples); ``kw`` as
    ``reward_sums``.

    Rewards are the weighted grader totals; an unscorable sample counts as 0, as OpenAI's graders do. The second
    figure is pass@k for 0/1 graders (k = ``samples_per_prompt``; equal to the mean when k = 1).
    """
    total, best, n, _ = reward_sums(model, tokenizer, rows, graders, **kw)
    k = kw.get("samples_per_prompt", 1)
    return total / max(n, 1), best / max(n // k, 1)


def reward_sums(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    *,
    samples_per_prompt: int = 1,
    temperature: float = 0.0,
    max_new_tokens: int = 64,
    prompts_per_batch: int = 16,
    seed: int = 0,
    weights: Sequence[float] | None = None,
    engine: RolloutEngine | None = None,
    first_row: int = 0,
    chat_template_kwargs: dict[str, Any] | None = None,
    agent: AgentRollouts | None = None,
) -> tuple[float, float, int, float]:
    """(Σ reward over every sample, Σ over prompts of the best of its k samples, samples, Σ over prompts of the
    squared mean of its k rewards): what ranks that each scored a share of the rows add up (``first_row``: the
    share's first row in the whole file, which keys the sampling noise, so a row draws the same samples whichever
    rank scores it). The last sum gives the spread of the per-prompt means: ``standard_error``.

    Each batch of ``prompts_per_batch`` rows is one grpo_core.rollout.scored.sample_and_score. ``engine`` (a
    rollout engine, synced to ``model``) samples instead of ``model.generate`` (the transformers engine, without
    autocast): during training the validation then runs on the same fast sampler as the rollouts. ``agent``
    (grpo_core.rollout.agent.episodes): the job's environment; each sample is then a multi-turn episode sampled with
    the agent's engine.
    """
    total, best, n, squares = 0.0, 0.0, 0, 0.0
    k = samples_per_prompt
    sampler: RolloutEngine = engine if engine is not None else TransformersEngine(model, tokenizer)
    for lo in range(0, len(rows), prompts_per_batch):
        batch = rows[lo : lo + prompts_per_batch]
        sampling = Sampling(k, max_new_tokens, temperature, top_p=1.0, seed=seed, first_row=(first_row + lo) * k)
        prompts = prompts_of(batch, tokenizer, chat_template_kwargs, agent)
        scored = sample_and_score(sampler, prompts, batch, graders, sampling, weights=weights, agent=agent)
        r = torch.nan_to_num(scored.rewards, nan=0.0).double()
        total += float(r.sum())
        best += float(r.view(-1, k).amax(dim=1).sum())
        squares += float(r.view(-1, k).mean(dim=1).square().sum())
        n += len(scored.texts)
    return total, best, n, squares


def standard_error(total: float, squares: float, prompts: int, k: int) -> float | None:
    """Standard error of the mean reward over ``prompts`` prompts (each the mean of its k samples), from
    ``reward_sums``' sums: how far the validation reward moves between two checkpoints by the luck of which prompts
    and samples it saw. None with fewer than two prompts."""
    if prompts < 2:
        return None
    mean = total / (prompts * k)
    variance = max(0.0, (squares - prompts * mean * mean) / (prompts - 1))
    return math.sqrt(variance / prompts)


def mean_reward(model: Any, tokenizer: Any, rows: list[dict[str, Any]], graders: Sequence[Grader], **kw: Any) -> float:
    """Mean reward over every sample (see ``evaluate_rewards``)."""
    return evaluate_rewards(model, tokenizer, rows, graders, **kw)[0]
