"""Padding-free micro-batches: a micro-batch's rows concatenated into one sequence, attention kept inside each row.

Layout. Rows that share a prompt form one *segment*: the prompt's P tokens once, then each row's completion up to
its last loss token (tool tokens of a multi-turn row included, padding never). A row without a shared prompt is a
segment of its own, [prompt | completion]. Position ids restart at 0 in every segment and run on from P in each
completion, so every token sees the positions the padded path gives it (RoPE included). Within a segment a
completion token attends the whole prompt and its own completion up to itself; a prompt token attends the prompt
up to itself; nothing attends across segments or across completions. Each completion token's log-prob is read
from the hidden state of the token before it (the prompt's last token for the first), so the G completions of a
prompt read the same prompt state and the backward sums their gradients into that one prompt computation: what
the padded path's shared prefix did with a KV cache, here without a cache, so it also holds under gradient
checkpointing.

Attention runs per segment through transformers' SDPA (``packed_attention`` swaps it in for the duration of a
forward and its backward): a one-row segment is plain causal attention (flash attention on a GPU); a segment of
several rows attends under its (S, S) boolean mask, or, past ``DENSE_SEGMENT_TOKENS``, as the prompt (causal) plus
one call per row against [prompt | row], so no mask grows with the square of a long group. (One (T, T) block mask
for the whole micro-batch measured no faster on a CPU, and grows with the square of the pack: docs/benchmarks.md.)
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.device import HOST
from grpo_core.models.catalog import length_dependent_rope

PACKED_ATTENTION = "grpo_packed"  # the attention name the packed forward runs with (``_packed_attention``)
# A segment up to this long attends under one (S, S) mask (SDPA keeps an S² bias per layer for the backward on a
# GPU, and the scores of every head on a CPU); longer, per row, with no mask growing with the square of a group
DENSE_SEGMENT_TOKENS = 2048
# Architectures whose causal LM is `lm_head(decoder(...))` with RoPE from position_ids and full attention: the
# packed forward calls the decoder and the head itself (grpo_core.update.fused_head), so a model that post-processes
# its logits (soft-capping, a logit scale) or attends in a sliding window would be computed wrongly.
PACKABLE_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "olmo2", "phi3"})


@dataclass(frozen=True)
class Segment:
    """Tokens ``start:end`` of the pack: a prompt of ``prompt`` tokens, then the completions at ``rows`` (absolute
    (a, b) bounds). ``mask``: the (1, 1, S, S) boolean mask of a multi-row segment up to ``DENSE_SEGMENT_TOKENS``
    tokens, else None; ``row_masks``: a longer one's (1, 1, n, P + n) mask of each row against [prompt | row]."""

    start: int
    end: int
    prompt: int
    rows: tuple[tuple[int, int], ...]
    mask: Tensor | None = None
    row_masks: tuple[Tensor, ...] = ()


@dataclass(frozen=True)
class PackedLayout:
    """How the pack's tokens may attend: per segment."""

    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class Packed:
    """One micro-batch as a single sequence, and where each loss token's log-prob comes from and goes to."""

    input_ids: Tensor  # (1, T)
    position_ids: Tensor  # (1, T)
    layout: PackedLayout
    source: Tensor  # (N,) position in the pack whose hidden state predicts each loss token
    targets: Tensor  # (N,) the loss tokens' ids
    rows: Tensor  # (N,) each loss token's row in the micro-batch
    cols: Tensor  # (N,) and its column in the completion
    shape: tuple[int, int]  # (B, C) of the padded micro-batch the log-probs are returned in


def span_lengths(completion_mask: Tensor) -> Tensor:
    """(B,) tokens of each completion up to and including its last loss token (0 for a row without one): what a
    row feeds the model, tool tokens between turns included."""
    c = completion_mask.shape[1]
    cols = torch.arange(1, c + 1, device=completion_mask.device)
    return (completion_mask.bool() * cols).amax(dim=1) if c else completion_mask.new_zeros(completion_mask.shape[0])


def _segment_mask(spans: Tensor) -> Tensor:
    """(1, 1, S, S) bool: position k visible from q when k ≤ q and k is prompt (span 0) or in q's own span."""
    q, k = spans.unsqueeze(1), spans.unsqueeze(0)
    pos = torch.arange(spans.shape[0], device=spans.device)
    return ((pos.unsqueeze(0) <= pos.unsqueeze(1)) & ((k == 0) | (k == q)))[None, None]


def _row_mask(prompt: int, n: int) -> Tensor:
    """(1, 1, n, prompt + n) bool: a completion's token q sees the whole prompt and its own tokens up to q."""
    cols = torch.arange(prompt + n, device=HOST)
    return ((cols.unsqueeze(0) < prompt) | (cols.unsqueeze(0) - prompt <= cols[:n].unsqueeze(1)))[None, None]


def pack(
    prompt_ids: Tensor,  # (B, P) left-padded
    prompt_mask: Tensor,  # (B, P)
    completion_ids: Tensor,  # (B, C) right-padded
    completion_mask: Tensor,  # (B, C) 1 on loss tokens
    *,
    share_prefix: bool,
) -> Packed:
    """The packed micro-batch on the rows' device. Built on the host from one copy of the micro-batch (the layout is
    host data: segment bounds are Python ints), then moved once."""
    device = completion_ids.device
    pid, pmask = prompt_ids.to(HOST), prompt_mask.to(HOST).bool()
    cid, cmask = completion_ids.to(HOST), completion_mask.to(HOST).bool()
    b, c = cid.shape
    spans = span_lengths(cmask).tolist()
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in range(b):
        if spans[i] == 0:
            continue  # nothing to score: the row feeds nothing
        prompt = tuple(pid[i][pmask[i]].tolist())
        if not prompt:
            raise ValueError(f"row {i} has an empty prompt: its first completion token has no position to come from")
        groups.setdefault(prompt if share_prefix else (i, *prompt), []).append(i)
    if not groups:
        raise ValueError("no row has a loss token: nothing to pack")
    ids: list[Tensor] = []
    pos: list[Tensor] = []
    span_ids: list[Tensor] = []
    source: list[Tensor] = []
    rows: list[Tensor] = []
    cols: list[Tensor] = []
    segments: list[Segment] = []
    at = 0
    for key, members in groups.items():
        prompt_t = torch.tensor(key if share_prefix else key[1:], dtype=torch.long, device=HOST)
        p = prompt_t.shape[0]
        start = at
        ids.append(prompt_t)
        pos.append(torch.arange(p, device=HOST))
        span_ids.append(torch.zeros(p, dtype=torch.long, device=HOST))
        at += p
        bounds = []
        for k, row in enumerate(members, start=1):
            n = spans[row]
            ids.append(cid[row, :n])
            pos.append(torch.arange(p, p + n, device=HOST))
            span_ids.append(torch.full((n,), k, dtype=torch.long, device=HOST))
            t = torch.nonzero(cmask[row, :n]).flatten()
            source.append(torch.where(t == 0, start + p - 1, at + t - 1))
            rows.append(torch.full_like(t, row))
            cols.append(t)
            bounds.append((at, at + n))
            at += n
        segments.append(Segment(start, at, p, tuple(bounds)))
    seg_spans = torch.cat(span_ids)
    for j, seg in enumerate(segments):  # the masks, built once here for every layer's attention
        if len(seg.rows) > 1 and seg.end - seg.start <= DENSE_SEGMENT_TOKENS:
            segments[j] = replace(seg, mask=_segment_mask(seg_spans[seg.start : seg.end]).to(device))
        elif len(seg.rows) > 1:
            segments[j] = replace(seg, row_masks=tuple(_row_mask(seg.prompt, b - a).to(device) for a, b in seg.rows))
    r, col = torch.cat(rows), torch.cat(cols)
    return Packed(
        input_ids=torch.cat(ids).unsqueeze(0).to(device),
        position_ids=torch.cat(pos).unsqueeze(0).to(device),
        layout=PackedLayout(tuple(segments)),
        source=torch.cat(source).to(device),
        targets=cid[r, col].to(device),
        rows=r.to(device),
        cols=col.to(device),
        shape=(b, c),
    )


def head_problem(model: Any) -> str | None:
    """Why ``model``'s LM head cannot run apart from it (grpo_core.update.fused_head), or None when it can: its
    logits must be ``lm_head(decoder(...))`` and nothing more."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config
    if config.model_type not in PACKABLE_MODEL_TYPES:
        return f"model type {config.model_type!r} is not one whose decoder and head are checked to run apart"
    if not hasattr(base, "get_decoder") or base.get_output_embeddings() is None:
        return "it has no separate decoder and LM head"
    return None


def packing_problem(model: Any) -> str | None:
    """Why ``model``'s update cannot run packed (and the padded path runs instead), or None when it can."""
    problem = head_problem(model)
    if problem is not None:
        return problem
    config = (model.get_base_model() if hasattr(model, "get_base_model") else model).config
    if getattr(config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return f"it attends with {config._attn_implementation!r}"
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        if any(t != "full_attention" for t in layer_types):
            return "it has sliding-window attention layers"
    elif getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return "it attends in a sliding window"  # the packed forward builds no mask, so no window either
    rope_type = length_dependent_rope(config)
    if rope_type is not None:
        return f"its RoPE ({rope_type}) depends on the sequence length"
    return None


def _packed_attention(
    module: Any, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None, **kwargs: Any
) -> tuple[Tensor, None]:
    """transformers' SDPA per segment of the ``packed_layout`` keyword (query (1, H, T, D), key/value (1, KV, T, D));
    without one, transformers' SDPA as is (a forward of the model outside the packed path). Never traced by
    torch.compile (grpo_core.update.compiled): its loops over the layout's segments would make every new layout a
    new graph; a compiled layer runs it eagerly between its compiled parts."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    layout: PackedLayout | None = kwargs.pop("packed_layout", None)
    if layout is None:
        whole: tuple[Tensor, None] = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return whole
    parts: list[Tensor] = []  # each (1, S, H, D)
    for seg in layout.segments:
        s, e = seg.start, seg.end
        if len(seg.rows) == 1 or seg.mask is not None:
            part, _ = sdpa_attention_forward(
                module, query[:, :, s:e], key[:, :, s:e], value[:, :, s:e], seg.mask, **kwargs
            )
            parts.append(part)
            continue
        p = s + seg.prompt  # a long group: the prompt causally, then each row against [prompt | row]
        part, _ = sdpa_attention_forward(module, query[:, :, s:p], key[:, :, s:p], value[:, :, s:p], None, **kwargs)
        parts.append(part)
        for (a, b), mask in zip(seg.rows, seg.row_masks, strict=True):
            keys = torch.cat([key[:, :, s:p], key[:, :, a:b]], dim=2)
            values = torch.cat([value[:, :, s:p], value[:, :, a:b]], dim=2)
            part, _ = sdpa_attention_forward(module, query[:, :, a:b], keys, values, mask, **kwargs)
            parts.append(part)
    return torch.cat(parts, dim=1), None


@functools.cache
def _register() -> None:
    """Make ``PACKED_ATTENTION`` an attention name transformers' models call, once per process (the same function
    object every time: a compiled layer's guards hold it). No mask function is
    registered for it, so transformers builds no (T, T) mask for a pack (``create_causal_mask`` returns None)."""
    from transformers import AttentionInterface

    never_traced: Callable[[Callable[..., Any]], Callable[..., Any]] = torch.compiler.disable  # untyped in torch
    AttentionInterface.register(PACKED_ATTENTION, never_traced(_packed_attention))


@contextlib.contextmanager
def packed_attention(model: Any, enabled: bool = True) -> Iterator[None]:
    """The model attends with ``_packed_attention`` inside: around a packed forward and around its backward (a
    checkpointed layer recomputes its forward there, and must attend per segment again)."""
    if not enabled:
        yield
        return
    _register()
    config = (model.get_base_model() if hasattr(model, "get_base_model") else model).config
    before, config._attn_implementation = config._attn_implementation, PACKED_ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = before
