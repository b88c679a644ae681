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

from grpo_core.models.prefix_cache import mask_or_none, prompt_prefix_cache, shared_prefixes
from grpo_core.update.captured import update_graphs
from grpo_core.update.fused_head import head_logprobs
from grpo_core.update.packing import Packed, pack, packed_attention
from grpo_core.update.token_logprob import logprobs_and_entropy


def _parts(model: Any) -> tuple[Any, Any]:
    """(decoder, LM head) of a causal LM or its peft wrapper: the fused head runs the two itself."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def compute_dtype(model: Any, autocast: torch.dtype | None = None) -> torch.dtype:
    """The dtype the model's matmuls run in: ``autocast`` when the caller will run them under it, else autocast's
    when it is on here for the model's device, else the weights'. A pack's attention layout is chosen for it."""
    if autocast is not None:
        return autocast
    weight: Tensor = next(model.parameters())
    device = weight.device.type
    if device in ("cpu", "cuda") and torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return weight.dtype


def _scattered(values: Tensor, rows: Tensor, cols: Tensor, shape: tuple[int, int]) -> Tensor:
    """(B, C) float32 with ``values`` at (rows, cols) and 0 elsewhere (a differentiable index_put)."""
    return values.new_zeros(shape, dtype=torch.float32).index_put((rows, cols), values.float())


def packed_token_logprobs(
    model: Any, packed: Packed, *, temperature: float, entropy_grad: bool | None = None, fused_head: bool = True
) -> tuple[Tensor, Tensor | None]:
    """(N,) float32 log-probs of the pack's loss tokens (``packed.targets``, in pack order) and, unless
    ``entropy_grad`` is None, their entropies: one packed sequence through the decoder (grpo_core.update.packing),
    the loss tokens' hidden states through the head (grpo_core.update.fused_head: in chunks when ``fused_head``).
    ``packed`` must be on the model's device (``Packed.to``). A pack padded to a bucket
    (grpo_core.update.captured.static_pack) replays the pass's CUDA graph while ``captured_passes`` is on; its
    padding's log-probs are dropped here."""

    def run(p: Packed) -> tuple[Tensor, Tensor | None]:
        return _token_logprobs(model, p, temperature=temperature, entropy_grad=entropy_grad, fused_head=fused_head)

    graphs = update_graphs(model)
    if packed.bucket is None:
        return run(packed)
    if graphs is None:
        logp, entropy = run(packed)
    else:
        logp, entropy = graphs.run(model, run, packed, (temperature, entropy_grad, fused_head))
    n = packed.loss_tokens
    return logp[:n], None if entropy is None else entropy[:n]


def _token_logprobs(
    model: Any, packed: Packed, *, temperature: float, entropy_grad: bool | None, fused_head: bool
) -> tuple[Tensor, Tensor | None]:
    """``packed_token_logprobs``, eagerly: what a graph records."""
    decoder, head = _parts(model)
    with packed_attention(model):
        hidden = decoder(
            input_ids=packed.input_ids,
            position_ids=packed.position_ids,
            use_cache=False,
            packed_layout=packed.layout,
        ).last_hidden_state[0]  # (T, H)
    return head_logprobs(
        hidden[packed.source],
        head,
        packed.targets,
        temperature=temperature,
        entropy_grad=entropy_grad,
        chunk_rows=None if fused_head else 0,
    )


def _packed_logprobs(
    model: Any, packed: Packed, *, temperature: float, entropy_grad: bool | None, fused_head: bool
) -> tuple[Tensor, Tensor | None]:
    """``packed_token_logprobs`` scattered into the micro-batch's (B, C) layout."""
    logp, entropy = packed_token_logprobs(
        model, packed, temperature=temperature, entropy_grad=entropy_grad, fused_head=fused_head
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
    if packing and packed is None and not bool(completion_mask.any()):  # nothing to pack: a plain padded pass
        share_prefix = fused_head = False  # (its loss is 0), with no cache to keep through checkpointed layers
    elif packing:  # a pack the caller made and moved (no host sync), or one made here
        if packed is None or packed.layout is None:
            packed = (packed or pack(*args, share_prefix=share_prefix)).to(completion_ids.device, compute_dtype(model))
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
    cache = prompt_prefix_cache(model, prompt_ids, prompt_mask, groups) if groups is not None else None
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
        hidden = decoder(attention_mask=mask_or_none(attn), **kw).last_hidden_state[:, keep]  # (B, C, H)
        rows, cols = torch.nonzero(completion_mask, as_tuple=True)
        logp, entropy = head_logprobs(
            hidden[rows, cols], head, completion_ids[rows, cols], temperature=temperature, entropy_grad=entropy_grad
        )
        shape = (completion_ids.shape[0], c)
        out = _scattered(logp, rows, cols, shape)
        return out if entropy is None else (out, _scattered(entropy, rows, cols, shape))
    logits = model(attention_mask=mask_or_none(attn), logits_to_keep=keep, **kw).logits  # (B, C, V)
    if temperature != 1.0:  # a full (B, C, V) pass: skipped when it would divide by 1
        logits = logits / temperature
    logp, ent = logprobs_and_entropy(logits, completion_ids, entropy_grad=entropy_grad)
    return logp if ent is None else (logp, ent)
