"""A prompt's KV cache, computed once and shared by every row that holds the prompt.

A GRPO batch holds G copies of each prompt. Both sides of a step run its prefix through the model once: the samplers
(grpo_core.rollout.engines) prefill each prompt once before decoding, and the update's padded path
(grpo_core.update.logprobs) indexes one prefix computation out to the G rows, so the backward accumulates every
row's gradient into it. These helpers are the model-level part both share: which rows hold the same prompt, the
prefill itself (positions counted from the mask, so left padding never shifts RoPE), and a transformers
``DynamicCache`` indexed out to the rows.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def mask_or_none(mask: Tensor) -> Tensor | None:
    """None for a mask without padding: the model then builds no (B, 1, Q, K) mask on every call, and plain causal
    attention is exactly what an all-ones mask asks for."""
    return None if bool(mask.all()) else mask


def shared_prefixes(prompt_ids: Tensor, prompt_mask: Tensor) -> tuple[Tensor, Tensor] | None:
    """(first row of each distinct prompt, each row's index into those), or None when no two rows share a prompt.

    A GRPO batch holds G copies of every prompt; rows are matched by their (left-padded) ids and mask, so the
    grouping holds whatever order the rows come in (length-sorted micro-batches, GFPO, dynamic sampling).
    """
    n, p = prompt_ids.shape
    if n < 2 or p < 2:
        return None
    key = torch.cat([prompt_ids * prompt_mask, prompt_mask], dim=1)
    uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
    if uniq.shape[0] == n:
        return None
    rows = torch.arange(n, device=prompt_ids.device)
    first = torch.full((uniq.shape[0],), n, dtype=torch.long, device=prompt_ids.device)
    first.scatter_reduce_(0, inverse, rows, reduce="amin")
    return first, inverse


def prefill_cache(model: Any, ids: Tensor, mask: Tensor, cache: object) -> None:
    """Run every token but the last of the left-padded ``ids`` into ``cache``: one forward, logits for one position
    only, positions counted from the mask so padding never shifts RoPE. The last token is left for the caller's
    next forward, which then yields the first prediction. Shared by the update's shared prefix
    (grpo_core.update.logprobs.completion_logprobs) and both samplers' once-per-prompt prefill
    (grpo_core.rollout.engines)."""
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    model(
        input_ids=ids[:, :-1],
        attention_mask=mask_or_none(mask[:, :-1]),
        position_ids=pos[:, :-1],
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )


def prompt_prefix_cache(
    model: Any, prompt_ids: Tensor, prompt_mask: Tensor, groups: tuple[Tensor, Tensor]
) -> object | None:
    """KV cache of every prompt token but the last, one forward per distinct prompt, indexed out to all rows; None
    (the caller runs the plain path) for a model whose cache cannot be built or indexed this way."""
    from transformers import DynamicCache

    first, inverse = groups
    try:
        cache = DynamicCache(config=model.config)
        prefill_cache(model, prompt_ids[first], prompt_mask[first], cache)
        cache.batch_select_indices(inverse)
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return None
    return cache
