"""Mean reward of a model on held-out rows: the number that says whether training helped.

Used by the demo to compare the base model with the trained adapter on the validation file; it samples
exactly like training does (same prompt formatting, same graders), in batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import torch

from grpo_core.data import prompt_text
from grpo_core.engines.base import Sampling
from grpo_core.engines.hf import sample
from grpo_core.rewards.base import Grader
from grpo_core.rewards.combine import score_samples, weighted_total


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
    engine: Any = None,
    first_row: int = 0,
    chat_template_kwargs: dict[str, Any] | None = None,
    agent: Any = None,
) -> tuple[float, float, int, float]:
    """(Σ reward over every sample, Σ over prompts of the best of its k samples, samples, Σ over prompts of the
    squared mean of its k rewards): what ranks that each scored a share of the rows add up (``first_row``: the
    share's first row in the whole file, which keys the sampling noise, so a row draws the same samples whichever
    rank scores it). The last sum gives the spread of the per-prompt means: ``standard_error``.

    ``engine`` (a rollout engine, synced to ``model``) samples instead of ``model.generate``: during training
    the validation then runs on the same fast sampler as the rollouts. ``agent`` (grpo_core.agent.episodes): the
    job's environment; each sample is then a multi-turn episode sampled with the agent's engine.
    """
    total, best, n, squares = 0.0, 0.0, 0, 0.0
    k = samples_per_prompt
    generate = engine.generate if engine is not None else partial(sample, model, tokenizer)
    for lo in range(0, len(rows), prompts_per_batch):
        batch = rows[lo : lo + prompts_per_batch]
        sampling = Sampling(k, max_new_tokens, temperature, top_p=1.0, seed=seed, first_row=(first_row + lo) * k)
        if agent is not None:
            ro = agent.run([agent.prompt(r) for r in batch], batch, sampling)
        else:
            ro = generate([prompt_text(r, tokenizer, chat_template_kwargs) for r in batch], sampling)
        rows_g = [r for r in batch for _ in range(k)]
        extras = [e.grader_view() for e in ro.episodes] if ro.episodes is not None else None
        scores = score_samples(graders, ro.texts, rows_g, [0] * len(rows_g), extras).matrix
        r = torch.nan_to_num(weighted_total(scores, weights or [1.0] * len(graders)), nan=0.0).double()
        total += float(r.sum())
        best += float(r.view(-1, k).amax(dim=1).sum())
        squares += float(r.view(-1, k).mean(dim=1).square().sum())
        n += len(ro.texts)
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
