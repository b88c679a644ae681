"""Mean reward of a model on held-out rows: the number that says whether training helped.

Used by the demo to compare the base model with the trained adapter on the validation file; it samples
exactly like training does (same prompt formatting, same graders), in batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from grpo_core.data import prompt_text
from grpo_core.rewards.graders import Grader
from grpo_core.rollout import sample


def mean_reward(
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
) -> float:
    """Average total reward over every sample (an unscorable sample counts as 0, as OpenAI's graders do)."""
    total, n = 0.0, 0
    for lo in range(0, len(rows), prompts_per_batch):
        batch = rows[lo : lo + prompts_per_batch]
        ro = sample(
            model,
            tokenizer,
            [prompt_text(r, tokenizer) for r in batch],
            group_size=samples_per_prompt,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=1.0,
            seed=seed + lo,
        )
        rows_g = [r for r in batch for _ in range(samples_per_prompt)]
        for g in graders:
            scores = g.score(ro.texts, rows_g).scores
            total += sum(0.0 if s is None or math.isnan(s) else s for s in scores)
        n += len(ro.texts)
    return total / max(n, 1)
