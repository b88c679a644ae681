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

Attention runs over the pack's *attention rows* (grpo_core.update.attention): the prompt of a segment, each of its
completions against [prompt | completion], a one-row segment as itself; one kernel call per layer for the whole
micro-batch (``packed_attention`` swaps it in for the duration of a forward and its backward). The pack is built on
the host, where its layout is Python data, and moved to the device once (``Packed.to``, without a host sync).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.device import HOST, to_device
from grpo_core.models.catalog import length_dependent_rope
from grpo_core.update.attention import (
    AttentionRow,
    Layout,
    PaddedLayout,
    padded_attention,
    padded_layout,
    varlen_attention,
    varlen_layout,
    varlen_works,
)

PACKED_ATTENTION = "grpo_packed"  # the attention name the packed forward runs with (``_packed_attention``)
# Architectures whose causal LM is `lm_head(decoder(...))` with RoPE from position_ids and full attention: the
# packed forward calls the decoder and the head itself (grpo_core.update.fused_head), so a model that post-processes
# its logits (soft-capping, a logit scale) or attends in a sliding window would be computed wrongly.
PACKABLE_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "olmo2", "phi3"})


@dataclass(frozen=True)
class Bucket:
    """The fixed sizes a pack is padded to for a captured pass (grpo_core.update.captured): tokens, attention
    rows, the longest row's queries and keys, and loss tokens."""

    tokens: int
    rows: int
    queries: int
    keys: int
    loss_tokens: int


@dataclass(frozen=True)
class Packed:
    """One micro-batch as a single sequence, and where each loss token's log-prob comes from and goes to. Built on
    the host (``pack``: ``layout`` None); ``to`` moves it to the device and builds the attention kernel's layout."""

    input_ids: Tensor  # (1, T)
    position_ids: Tensor  # (1, T)
    attention: tuple[AttentionRow, ...]  # the pack's attention rows, in order (grpo_core.update.attention)
    source: Tensor  # (N,) position in the pack whose hidden state predicts each loss token
    targets: Tensor  # (N,) the loss tokens' ids
    rows: Tensor  # (N,) each loss token's row in the micro-batch
    cols: Tensor  # (N,) and its column in the completion
    shape: tuple[int, int]  # (B, C) of the padded micro-batch the log-probs are returned in
    layout: Layout | None = None  # the kernel's layout on the device (``to``)
    bucket: Bucket | None = None  # the sizes it is padded to (grpo_core.update.captured.static_pack), if any

    @property
    def loss_tokens(self) -> int:
        """Its real loss tokens: ``source`` and ``targets`` may run on with a bucket's padding."""
        return int(self.rows.shape[0])

    @property
    def segments(self) -> int:
        """Segments in the pack: prompts shared by several rows and rows of their own."""
        return sum(1 for r in self.attention if r.p_len == 0)

    def to(self, device: torch.device, compute_dtype: torch.dtype | None = None) -> Packed:
        """On ``device``, with the varlen kernel's layout where it works there (CUDA, a half ``compute_dtype``:
        grpo_core.update.attention.varlen_works), else the padded one's, sized for the bucket's longest row when
        the pack has one; every copy queued without a sync."""
        tokens = self.input_ids.shape[1]
        lengths = None if self.bucket is None else (self.bucket.queries, self.bucket.keys)
        dtype = compute_dtype or torch.float32
        if varlen_works(str(device), dtype):
            layout: Layout = varlen_layout(self.attention, tokens, device, lengths)
        else:
            layout = padded_layout(self.attention, tokens, device, lengths)
        moved = (to_device(t, device) for t in (self.input_ids, self.position_ids, self.source, self.targets))
        ids, pos, source, targets = moved
        rows, cols = to_device(self.rows, device), to_device(self.cols, device)
        return replace(self, input_ids=ids, position_ids=pos, source=source, targets=targets, rows=rows, cols=cols,
                       layout=layout)  # fmt: skip


def span_lengths(completion_mask: Tensor) -> Tensor:
    """(B,) tokens of each completion up to and including its last loss token (0 for a row without one): what a
    row feeds the model, tool tokens between turns included."""
    c = completion_mask.shape[1]
    cols = torch.arange(1, c + 1, device=completion_mask.device)
    return (completion_mask.bool() * cols).amax(dim=1) if c else completion_mask.new_zeros(completion_mask.shape[0])


def pack(
    prompt_ids: Tensor,  # (B, P) left-padded
    prompt_mask: Tensor,  # (B, P)
    completion_ids: Tensor,  # (B, C) right-padded
    completion_mask: Tensor,  # (B, C) 1 on loss tokens
    *,
    share_prefix: bool,
) -> Packed:
    """The packed micro-batch, on the host (its layout is host data: bounds are Python ints); ``Packed.to`` moves
    it. Rows of a shared prompt attend as the prompt and one attention row per completion; a segment of one row as
    one attention row."""
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
    source: list[Tensor] = []
    rows: list[Tensor] = []
    cols: list[Tensor] = []
    attention: list[AttentionRow] = []
    at = 0
    for key, members in groups.items():
        prompt_t = torch.tensor(key if share_prefix else key[1:], dtype=torch.long, device=HOST)
        p = prompt_t.shape[0]
        start = at
        ids.append(prompt_t)
        pos.append(torch.arange(p, device=HOST))
        at += p
        if len(members) > 1:
            attention.append(AttentionRow(start, p))
        for row in members:
            n = spans[row]
            ids.append(cid[row, :n])
            pos.append(torch.arange(p, p + n, device=HOST))
            t = torch.nonzero(cmask[row, :n]).flatten()
            source.append(torch.where(t == 0, start + p - 1, at + t - 1))
            rows.append(torch.full_like(t, row))
            cols.append(t)
            attention.append(AttentionRow(at, n, start, p) if len(members) > 1 else AttentionRow(start, p + n))
            at += n
    r, col = torch.cat(rows), torch.cat(cols)
    return Packed(
        input_ids=torch.cat(ids).unsqueeze(0),
        position_ids=torch.cat(pos).unsqueeze(0),
        attention=tuple(attention),
        source=torch.cat(source),
        targets=cid[r, col],
        rows=r,
        cols=col,
        shape=(b, c),
    )


def pack_sequences(tokens: list[list[int]], targets: list[list[int]]) -> Packed:
    """Whole sequences packed, each a segment of its own in the given order, every position a loss token: position
    i predicts ``targets[k][i]`` (the training API's datums, grpo_core.training_api.model). On the host, as
    ``pack``'s."""
    lengths = [len(t) for t in tokens]
    if not lengths or min(lengths) < 1 or [len(t) for t in targets] != lengths:
        raise ValueError("every sequence needs at least one token and one target per token")
    starts = [0]
    for n in lengths[:-1]:
        starts.append(starts[-1] + n)
    positions = torch.cat([torch.arange(n, device=HOST) for n in lengths])
    total = sum(lengths)
    return Packed(
        input_ids=torch.tensor([t for seq in tokens for t in seq], dtype=torch.long, device=HOST).unsqueeze(0),
        position_ids=positions.unsqueeze(0),
        attention=tuple(AttentionRow(s, n) for s, n in zip(starts, lengths, strict=True)),
        source=torch.arange(total, device=HOST),
        targets=torch.tensor([t for seq in targets for t in seq], dtype=torch.long, device=HOST),
        rows=torch.repeat_interleave(torch.arange(len(lengths), device=HOST), torch.tensor(lengths, device=HOST)),
        cols=positions,
        shape=(len(lengths), max(lengths)),
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
    """The pack's attention (query (1, H, T, D), key/value (1, KV, T, D)) in one kernel call over the layout of the
    ``packed_layout`` keyword (grpo_core.update.attention); without one, transformers' SDPA as is (a forward of
    the model outside the packed path). Returns (1, T, H, D), as transformers' attention functions do. Never traced
    by torch.compile (grpo_core.update.compiled): a compiled layer runs it eagerly between its compiled parts."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    layout: Layout | None = kwargs.pop("packed_layout", None)
    if layout is None:
        whole: tuple[Tensor, None] = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return whole
    q, k, v = (t.squeeze(0).transpose(0, 1) for t in (query, key, value))  # (T, heads, D): views, no copy back
    scale = kwargs.get("scaling")
    if isinstance(layout, PaddedLayout):
        return padded_attention(q, k, v, layout, scale).unsqueeze(0), None
    return varlen_attention(q, k, v, layout, scale).unsqueeze(0), None


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
