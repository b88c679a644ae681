"""Per-token log-probabilities of the sampled completion tokens only.

The model sees [left-padded prompt | completion] with an attention mask and explicit position ids (so left
padding never shifts RoPE positions). Only the C positions that predict completion tokens get logits
(``logits_to_keep``), divided by the sampling temperature — the policy that sampled the tokens is softmax(z/T),
so the ratio and KL must use the same distribution — and the log-prob of each sampled token is
``z_t − logsumexp(z)``, without materialising a full-vocabulary log-softmax tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

import torch
from torch import Tensor


class TokenLogProb(torch.autograd.Function):
    """log softmax(z)[index] per position, with a one-pass backward: dz = g · (onehot(index) − softmax(z)).

    Autograd through ``gather(z) − logsumexp(z)`` builds, per sequence, a zero-filled scatter for the gather, a
    softmax for the logsumexp and an add of the two — three (T, V) tensors in fp32 and their kernels; here the
    backward writes each row's gradient once, in the logits' dtype. Forward and backward work one sequence at a
    time, so no (B, T, V) fp32 tensor ever exists.
    """

    @staticmethod
    def forward(ctx: Any, logits: Tensor, index: Tensor) -> Tensor:
        out = torch.empty(index.shape, dtype=torch.float32, device=logits.device)
        lse = torch.empty(index.shape, dtype=torch.float32, device=logits.device)
        for i in range(logits.shape[0]):
            row = logits[i].float()
            lse[i] = torch.logsumexp(row, dim=-1)
            out[i] = row.gather(-1, index[i].unsqueeze(-1)).squeeze(-1) - lse[i]
        ctx.save_for_backward(logits, index, lse)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        logits, index, lse = ctx.saved_tensors
        grad_logits = torch.empty_like(logits)
        for i in range(logits.shape[0]):
            g = grad[i].float().unsqueeze(-1)  # (T, 1)
            p = (logits[i].float() - lse[i].unsqueeze(-1)).exp_().mul_(-g)
            p.scatter_add_(-1, index[i].unsqueeze(-1), g)
            grad_logits[i] = p
        return grad_logits, None


# torch.autograd.Function.apply is untyped; this is its signature for TokenLogProb
_token_logprob: Callable[[Tensor, Tensor], Tensor] = TokenLogProb.apply


def logprobs_and_entropy(
    logits: Tensor, index: Tensor, *, entropy_grad: bool | None = False
) -> tuple[Tensor, Tensor | None]:
    """Per-token log-prob of ``index`` and the entropy H = logsumexp(z) − Σ softmax(z)·z, one sequence at a time.

    ``entropy_grad=None`` skips the entropy; ``False`` computes it without gradient (a metric); ``True`` keeps
    its gradient (for an entropy bonus).
    """
    logp = _token_logprob(logits, index)
    if entropy_grad is None:
        return logp, None
    ents = []
    with torch.set_grad_enabled(bool(entropy_grad) and torch.is_grad_enabled()):
        for i in range(logits.shape[0]):  # (T, V) at a time
            row = logits[i].float()
            ents.append(torch.logsumexp(row, dim=-1) - (torch.softmax(row, dim=-1) * row).sum(dim=-1))
    return logp, torch.stack(ents)


def _mask_or_none(mask: Tensor) -> Tensor | None:
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
    (``completion_logprobs``) and both samplers' once-per-prompt prefill (grpo_core.rollout.engines)."""
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    model(
        input_ids=ids[:, :-1],
        attention_mask=_mask_or_none(mask[:, :-1]),
        position_ids=pos[:, :-1],
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )


def _prefix_cache(model: Any, prompt_ids: Tensor, prompt_mask: Tensor, groups: tuple[Tensor, Tensor]) -> object | None:
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


@overload
def completion_logprobs(
    model: Any,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    completion_ids: Tensor,
    completion_mask: Tensor,
    *,
    temperature: float,
    entropy_grad: None = None,
    share_prefix: bool = True,
) -> Tensor: ...


@overload
def completion_logprobs(
    model: Any,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    completion_ids: Tensor,
    completion_mask: Tensor,
    *,
    temperature: float,
    entropy_grad: bool,
    share_prefix: bool = True,
) -> tuple[Tensor, Tensor]: ...


def completion_logprobs(
    model: Any,  # a transformers causal LM, or its peft wrapper
    prompt_ids: Tensor,  # (B, P)
    prompt_mask: Tensor,  # (B, P)
    completion_ids: Tensor,  # (B, C)
    completion_mask: Tensor,  # (B, C)
    *,
    temperature: float,
    entropy_grad: bool | None = None,
    share_prefix: bool = True,
) -> Tensor | tuple[Tensor, Tensor]:
    """(B, C) float32 log π(completion token | prefix) at the given temperature; with ``entropy_grad`` not None,
    also the (B, C) entropy of π at each position (see ``logprobs_and_entropy``).

    With ``share_prefix`` (and rows that share a prompt) each distinct prompt but its last token goes through the
    model once; its KV cache is indexed out to the rows that share it and only [last prompt token | completion]
    runs per row. The cache is an ordinary tensor in the autograd graph, so the backward pass accumulates every
    row's gradient into the one prefix computation: the same loss and gradient as G separate prefixes (up to
    float rounding) for about 1/G of the prompt's forward and backward compute.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    # Completion positions after EOS still attend normally; they are masked out of the loss, not the input,
    # so earlier positions' logits are unaffected either way (causal attention).
    attn = torch.cat([prompt_mask, torch.ones_like(completion_mask)], dim=1)
    position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)
    c, p = completion_ids.shape[1], prompt_ids.shape[1]
    groups = shared_prefixes(prompt_ids, prompt_mask) if share_prefix else None
    cache = _prefix_cache(model, prompt_ids, prompt_mask, groups) if groups is not None else None
    # The C positions that predict completion tokens (the last one would predict past the completion: no head
    # matmul and no (B, C+1, V) slice to back-propagate through for it).
    if cache is None:
        keep = torch.arange(p - 1, p + c - 1, device=input_ids.device)
        logits = model(
            input_ids=input_ids,
            attention_mask=_mask_or_none(attn),
            position_ids=position_ids,
            logits_to_keep=keep,
            use_cache=False,  # no cache to fill: a scoring pass (and checkpointed layers could not keep one)
        ).logits  # (B, C, V)
    else:
        logits = model(
            input_ids=input_ids[:, p - 1 :],
            attention_mask=_mask_or_none(attn),
            position_ids=position_ids[:, p - 1 :],
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.arange(c, device=input_ids.device),
        ).logits  # (B, C, V): position t predicts completion token t
    if temperature != 1.0:  # a full (B, C, V) pass: skipped when it would divide by 1
        logits = logits / temperature
    logp, entropy = logprobs_and_entropy(logits, completion_ids, entropy_grad=entropy_grad)
    return logp if entropy is None else (logp, entropy)
