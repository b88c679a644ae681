"""Per-token log-probabilities of the sampled completion tokens only.

The model sees [left-padded prompt | completion] with an attention mask and explicit position ids (so left
padding never shifts RoPE positions). Only the C positions that predict completion tokens get logits
(``logits_to_keep``), divided by the sampling temperature — the policy that sampled the tokens is softmax(z/T),
so the ratio and KL must use the same distribution — and the log-prob of each sampled token is
``z_t − logsumexp(z)``, without materialising a full-vocabulary log-softmax tensor.
"""

from __future__ import annotations

from typing import Any, overload

import torch
from torch import Tensor

from grpo_core.update.fused_head import head_logprobs
from grpo_core.update.packing import Packed, pack, packed_attention
from grpo_core.update.token_logprob import logprobs_and_entropy


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


def _parts(model: Any) -> tuple[Any, Any]:
    """(decoder, LM head) of a causal LM or its peft wrapper: the fused head runs the two itself."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def _scattered(values: Tensor, rows: Tensor, cols: Tensor, shape: tuple[int, int]) -> Tensor:
    """(B, C) float32 with ``values`` at (rows, cols) and 0 elsewhere (a differentiable index_put)."""
    return values.new_zeros(shape, dtype=torch.float32).index_put((rows, cols), values.float())


def _packed_logprobs(
    model: Any, packed: Packed, *, temperature: float, entropy_grad: bool | None, fused_head: bool
) -> tuple[Tensor, Tensor | None]:
    """The padding-free path (grpo_core.update.packing): one packed sequence through the decoder, the loss tokens'
    hidden states through the head (grpo_core.update.fused_head: in chunks when ``fused_head``)."""
    decoder, head = _parts(model)
    with packed_attention(model):
        hidden = decoder(
            input_ids=packed.input_ids,
            position_ids=packed.position_ids,
            use_cache=False,
            packed_layout=packed.layout,
        ).last_hidden_state[0]  # (T, H)
    logp, entropy = head_logprobs(
        hidden[packed.source],
        head,
        packed.targets,
        temperature=temperature,
        entropy_grad=entropy_grad,
        chunk_rows=None if fused_head else 0,
    )
    out = _scattered(logp, packed.rows, packed.cols, packed.shape)
    return out, None if entropy is None else _scattered(entropy, packed.rows, packed.cols, packed.shape)


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
    packing: bool = False,
    fused_head: bool = False,
    packed: Packed | None = None,
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
    packing: bool = False,
    fused_head: bool = False,
    packed: Packed | None = None,
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
    packing: bool = False,
    fused_head: bool = False,
    packed: Packed | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """(B, C) float32 log π(completion token | prefix) at the given temperature; with ``entropy_grad`` not None,
    also the (B, C) entropy of π at each position (see ``logprobs_and_entropy``).

    ``packing``: the rows packed without padding (grpo_core.update.packing; ``packed``: their pack, built once by
    the caller for the passes of a micro-batch, else here); ``fused_head``: the LM head in chunks fused with the
    log-prob (grpo_core.update.fused_head). With either, only loss tokens (``completion_mask`` 1) get a log-prob
    and every other position is 0; without, every completion position has its own.

    Padded, with ``share_prefix`` (and rows that share a prompt) each distinct prompt but its last token goes
    through the model once; its KV cache is indexed out to the rows that share it and only [last prompt token |
    completion] runs per row. The cache is an ordinary tensor in the autograd graph, so the backward pass
    accumulates every row's gradient into the one prefix computation: the same loss and gradient as G separate
    prefixes (up to float rounding) for about 1/G of the prompt's forward and backward compute. Packed, the rows
    of a prompt share it as one segment (the same sums, no cache).
    """
    args = (prompt_ids, prompt_mask, completion_ids, completion_mask)
    if packing and not bool(completion_mask.any()):  # nothing to pack: a plain padded pass (its loss is 0),
        share_prefix = fused_head = False  # with no cache to keep through checkpointed layers
    elif packing:
        packed = packed or pack(*args, share_prefix=share_prefix)
        logp, entropy = _packed_logprobs(
            model, packed, temperature=temperature, entropy_grad=entropy_grad, fused_head=fused_head
        )
        return logp if entropy is None else (logp, entropy)
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
        kw: dict[str, Any] = {"input_ids": input_ids, "position_ids": position_ids, "use_cache": False}
        keep = torch.arange(p - 1, p + c - 1, device=input_ids.device)
    else:
        kw = {
            "input_ids": input_ids[:, p - 1 :],
            "position_ids": position_ids[:, p - 1 :],
            "past_key_values": cache,
            "use_cache": True,
        }
        keep = torch.arange(c, device=input_ids.device)  # position t predicts completion token t
    # use_cache=False without a prefix: a scoring pass (and checkpointed layers could not keep a cache)
    if fused_head:
        decoder, head = _parts(model)
        hidden = decoder(attention_mask=_mask_or_none(attn), **kw).last_hidden_state[:, keep]  # (B, C, H)
        rows, cols = torch.nonzero(completion_mask, as_tuple=True)
        logp, entropy = head_logprobs(
            hidden[rows, cols], head, completion_ids[rows, cols], temperature=temperature, entropy_grad=entropy_grad
        )
        shape = (completion_ids.shape[0], c)
        out = _scattered(logp, rows, cols, shape)
        return out if entropy is None else (out, _scattered(entropy, rows, cols, shape))
    logits = model(attention_mask=_mask_or_none(attn), logits_to_keep=keep, **kw).logits  # (B, C, V)
    if temperature != 1.0:  # a full (B, C, V) pass: skipped when it would divide by 1
        logits = logits / temperature
    logp, ent = logprobs_and_entropy(logits, completion_ids, entropy_grad=entropy_grad)
    return logp if ent is None else (logp, ent)
