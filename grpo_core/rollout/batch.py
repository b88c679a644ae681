"""A step's sampled sequences (``Rollout``) and the masks that go with them, whatever engine sampled them.

The completion mask is built from the generated token ids: a token counts up to and including the first EOS (any
id in the model's generation config), never by comparing with the pad id — SmolLM2 and Qwen pad with their EOS,
so a pad-based mask would drop the real EOS and train the model never to stop. A completion with no EOS is
"truncated".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.device import HOST


@dataclass
class Rollout:
    """One step's sampled sequences; B = n_prompts × G, rows grouped by prompt."""

    prompt_ids: Tensor  # (B, P) left-padded
    prompt_mask: Tensor  # (B, P) 1 on real prompt tokens
    completion_ids: Tensor  # (B, C) right-padded
    completion_mask: Tensor  # (B, C) 1 up to and including the first EOS
    truncated: Tensor  # (B,) bool: no EOS within max_completion_tokens
    texts: list[str]  # decoded completions, special tokens stripped
    # (B, C) log-probs the engine gave the sampled tokens (after temperature), 0 past the mask; set by engines
    # that are not the trainer's own forward pass (vLLM), for the truncated importance-sampling correction.
    sampling_logp: Tensor | None = None
    # Multi-turn rollouts (grpo_core.rollout.agent.episodes): one Episode per row, the conversation and tool calls
    # behind it; its completion then holds tool and template tokens too, with completion_mask 0 on them.
    episodes: list[Any] | None = None
    # (B,) long: the policy version (optimizer steps taken) whose weights sampled each row; set by an engine that
    # samples beside the trainer (grpo_core.rollout.pipeline), None where the trainer's current weights sampled.
    versions: Tensor | None = None

    def to(self, device: torch.device) -> Rollout:
        """The same rollout on ``device``: rollouts are built on the host (engines return CPU tensors, grader
        scores are host data) and moved to the model's device once per update."""
        return Rollout(
            self.prompt_ids.to(device),
            self.prompt_mask.to(device),
            self.completion_ids.to(device),
            self.completion_mask.to(device),
            self.truncated.to(device),
            self.texts,
            None if self.sampling_logp is None else self.sampling_logp.to(device),
            self.episodes,
            self.versions,  # host bookkeeping: never read on the device
        )

    def select(self, idx: Tensor) -> Rollout:
        """Rows ``idx`` (a 1-D long tensor), in that order."""
        return Rollout(
            self.prompt_ids[idx],
            self.prompt_mask[idx],
            self.completion_ids[idx],
            self.completion_mask[idx],
            self.truncated[idx],
            [self.texts[int(i)] for i in idx],
            None if self.sampling_logp is None else self.sampling_logp[idx],
            None if self.episodes is None else [self.episodes[int(i)] for i in idx],
            None if self.versions is None else self.versions[idx],
        )


def _pad_to(x: Tensor, width: int, left: bool) -> Tensor:
    """``x`` (B, W) padded with zeros to ``width`` columns (padding is always masked out)."""
    pad = x.new_zeros((x.shape[0], width - x.shape[1]))
    return torch.cat([pad, x] if left else [x, pad], dim=1)


def left_padded(seqs: list[list[int]], pad_id: int, device: torch.device = HOST) -> tuple[Tensor, Tensor]:
    """(ids, mask) of token lists left-padded to the longest, on ``device`` (prompts, a trajectory so far): built on
    the host and moved once, not one small copy per row."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long, device=HOST)
    mask = torch.zeros((len(seqs), width), dtype=torch.long, device=HOST)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long, device=HOST)
            mask[i, width - len(s) :] = 1
    return ids.to(device), mask.to(device)


def right_padded(seqs: list[list[Any]], fill: float, dtype: torch.dtype = torch.long) -> Tensor:
    """Host tensor of lists right-padded with ``fill`` to the longest (at least one column): completions, their
    masks, their log-probs."""
    out = torch.full((len(seqs), max(1, max(len(s) for s in seqs))), fill, dtype=dtype, device=HOST)
    for i, s in enumerate(seqs):
        if s:
            out[i, : len(s)] = torch.tensor(s, dtype=dtype, device=HOST)
    return out


def empty_rollout() -> Rollout:
    """A rollout of no rows (a rank whose share of a short batch is empty); ``concat_rollouts`` skips it."""
    ids = torch.zeros((0, 1), dtype=torch.long, device=HOST)
    return Rollout(ids, ids, ids, ids, torch.zeros(0, dtype=torch.bool, device=HOST), [])


def concat_rollouts(parts: list[Rollout]) -> Rollout:
    """One Rollout from several (dynamic sampling's rounds, the ranks' shares): prompts re-left-padded,
    completions re-right-padded; parts with no rows are left out."""
    parts = [p for p in parts if p.completion_ids.shape[0]] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    p_w = max(r.prompt_ids.shape[1] for r in parts)
    c_w = max(r.completion_ids.shape[1] for r in parts)
    logp = None
    engine_logps = [r.sampling_logp for r in parts if r.sampling_logp is not None]
    if len(engine_logps) == len(parts):
        logp = torch.cat([_pad_to(x, c_w, False) for x in engine_logps])
    return Rollout(
        torch.cat([_pad_to(r.prompt_ids, p_w, True) for r in parts]),
        torch.cat([_pad_to(r.prompt_mask, p_w, True) for r in parts]),
        torch.cat([_pad_to(r.completion_ids, c_w, False) for r in parts]),
        torch.cat([_pad_to(r.completion_mask, c_w, False) for r in parts]),
        torch.cat([r.truncated for r in parts]),
        [t for r in parts for t in r.texts],
        logp,
        _concat_episodes(parts),
        _concat_versions(parts),
    )


def _concat_versions(parts: list[Rollout]) -> Tensor | None:
    versions = [r.versions for r in parts if r.versions is not None]
    return torch.cat(versions) if len(versions) == len(parts) else None


def _concat_episodes(parts: list[Rollout]) -> list[Any] | None:
    out: list[Any] = []
    for r in parts:
        if r.episodes is None:
            return None
        out += r.episodes
    return out


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every id that ends a completion: the generation config's EOS ids plus the tokenizer's."""
    ids: set[int] = set()
    gen = getattr(model, "generation_config", None)
    for src in (getattr(gen, "eos_token_id", None), tokenizer.eos_token_id):
        if src is None:
            continue
        ids.update(src if isinstance(src, list | tuple) else [src])
    if not ids:
        raise ValueError("the model defines no EOS token: completions could never end")
    return sorted(ids)


def completion_mask(completion_ids: Tensor, stop_ids: list[int]) -> tuple[Tensor, Tensor]:
    """(mask, truncated) for right-padded completions: 1 up to and including the first stop id."""
    is_eos = torch.isin(completion_ids, torch.tensor(stop_ids, device=completion_ids.device))
    seen_before = torch.cumsum(is_eos.int(), dim=1) - is_eos.int()  # EOS strictly before position t
    mask = (seen_before == 0).long()
    truncated = ~is_eos.any(dim=1)
    return mask, truncated


def pack_rollout(
    prompts: list[list[int]],
    completions: list[list[int]],
    stop_ids: list[int],
    pad_id: int,
    decode: Callable[[list[int]], str],
    sampling_logp: list[list[float]] | None = None,
) -> Rollout:
    """A Rollout from token lists (row i = prompt i's completion): prompts left-padded, completions right-padded.

    For engines that return token lists (vLLM); masks follow the same first-EOS rule as ``sample``.
    """
    prompt_ids, prompt_mask = left_padded(prompts, pad_id)
    completion_ids = right_padded(completions, pad_id)
    logp = right_padded(sampling_logp, 0.0, torch.float32) if sampling_logp is not None else None
    mask, truncated = completion_mask(completion_ids, stop_ids)
    for i, c in enumerate(completions):  # positions past the generated tokens are padding, never content
        mask[i, len(c) :] = 0
    if logp is not None:
        logp = logp * mask
    texts = [decode(c[: int(m.sum())]) for c, m in zip(completions, mask, strict=True)]
    return Rollout(prompt_ids, prompt_mask, completion_ids, mask, truncated, texts, logp)
