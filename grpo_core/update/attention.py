"""Attention over a packed micro-batch in one kernel call per layer, whatever its segments.

A pack (grpo_core.update.packing) is cut into *attention rows*, in pack order, covering every token once as a
query: a shared prompt (its queries and keys the prompt's tokens), each completion of that prompt (its queries
its own tokens, its keys the prompt's and its own), and a segment of one row (its queries and keys the whole
segment). In every row the keys end with the queries, so "causal" means the same thing in all of them: query i of
n sees the first ``len(keys) − n + i + 1`` keys (flash attention's bottom-right alignment). The prompt's keys and
values are gathered into each of its rows, so the prompt is computed once and its gradient sums its rows', as
before; nothing attends across rows.

Two kernels run this layout, chosen per pack (``Packed.to``):

- *varlen* (CUDA, bf16/fp16): torch's variable-length flash attention over the gathered keys: two gathers (keys,
  values), one call, no padding and no mask; the queries are the pack itself, in order.
- *padded* (every device): rows padded to the longest, one ``scaled_dot_product_attention`` under a (R, 1, Lq, Lk)
  boolean mask built once per pack: gathers of queries, keys and values, one call, one gather back.

Before, a segment of several rows attended under its own (S, S) mask, or per row past 2048 tokens: 18 calls, 32
concatenations and 32 ``repeat_kv`` copies per layer and pass at 2 prompts × 8 × 256 tokens (issue 44).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from grpo_core.hardware.device import HOST, to_device

log = logging.getLogger(__name__)
# On a CPU the padded kernel runs SDPA's math kernel for rows up to this many queries and its flash kernel past it:
# at SmolLM2's shape the math one took 0.86x the flash one's update time with rows of <= 64 queries (1 x 8 x 64
# tokens) and the flash one 0.87x the math one's with rows of 256 (2 x 8 x 256); the flash kernel takes the mask and
# the grouped heads in one op where the math one takes ~20 (bench.update_counts)
CPU_FLASH_MIN_QUERIES = 128


@dataclass(frozen=True)
class AttentionRow:
    """Queries ``q_start : q_start + q_len`` of the pack; keys the prompt ``p_start : p_start + p_len`` (p_len 0
    for none), then the queries' own tokens."""

    q_start: int
    q_len: int
    p_start: int = 0
    p_len: int = 0


@dataclass(frozen=True)
class VarlenLayout:
    """The varlen kernel's arguments: the gathered keys' positions and the cumulative lengths (int32)."""

    k_index: Tensor  # (ΣLk,)
    cu_q: Tensor  # (R + 1,)
    cu_k: Tensor  # (R + 1,)
    max_q: int
    max_k: int


@dataclass(frozen=True)
class PaddedLayout:
    """The padded kernel's arguments: each row's query and key slots (pad slots read token 0 and are masked), the
    mask, and each token's slot in the padded output."""

    q_slots: Tensor  # (R * Lq,)
    k_slots: Tensor  # (R * Lk,)
    mask: Tensor  # (R, 1, Lq, Lk) bool; a pad query sees key 0 only (no row all masked: no NaN in the backward)
    out_slots: Tensor  # (T,)
    rows: int
    lq: int
    lk: int


Layout = VarlenLayout | PaddedLayout


def _check(rows: tuple[AttentionRow, ...], tokens: int) -> None:
    at = 0
    for r in rows:
        if r.q_start != at or r.q_len < 1:
            raise ValueError(f"attention rows must cover the pack's {tokens} tokens in order: {r} at {at}")
        at += r.q_len
    if at != tokens:
        raise ValueError(f"attention rows cover {at} of the pack's {tokens} tokens")


def _at_least(found: int, given: int | None, what: str) -> int:
    """``given`` (a captured bucket's fixed length) when set and no shorter than ``found``, else ``found``."""
    if given is None:
        return found
    if given < found:
        raise ValueError(f"a fixed {what} of {given} is shorter than the pack's {found}")
    return given


def varlen_layout(
    rows: tuple[AttentionRow, ...], tokens: int, device: torch.device, lengths: tuple[int, int] | None = None
) -> VarlenLayout:
    """``rows`` (covering ``tokens`` in order) for the varlen kernel, built on the host and moved once.
    ``lengths``: (queries, keys) to pass as the longest row's instead of the pack's own (a captured bucket's:
    the kernel then launches the same grid for every pack of the bucket; grpo_core.update.captured)."""
    _check(rows, tokens)
    fixed_q, fixed_k = lengths or (None, None)
    span = functools.partial(torch.arange, device=HOST)
    keys = [torch.cat([span(r.p_start, r.p_start + r.p_len), span(r.q_start, r.q_start + r.q_len)]) for r in rows]
    q_lens = torch.tensor([r.q_len for r in rows], device=HOST)
    k_lens = torch.tensor([len(k) for k in keys], device=HOST)
    zero = torch.zeros(1, dtype=torch.int32, device=HOST)
    return VarlenLayout(
        k_index=to_device(torch.cat(keys), device),
        cu_q=to_device(torch.cat([zero, q_lens.cumsum(0).to(torch.int32)]), device),
        cu_k=to_device(torch.cat([zero, k_lens.cumsum(0).to(torch.int32)]), device),
        max_q=_at_least(int(q_lens.max()), fixed_q, "query length"),
        max_k=_at_least(int(k_lens.max()), fixed_k, "key length"),
    )


def padded_layout(
    rows: tuple[AttentionRow, ...], tokens: int, device: torch.device, lengths: tuple[int, int] | None = None
) -> PaddedLayout:
    """``rows`` (covering ``tokens`` in order) for the padded kernel, built on the host and moved once.
    ``lengths``: (queries, keys) each row is padded to, at least the longest row's (``varlen_layout``)."""
    _check(rows, tokens)
    fixed_q, fixed_k = lengths or (None, None)
    q_start = torch.tensor([r.q_start for r in rows], device=HOST)[:, None]
    q_len = torch.tensor([r.q_len for r in rows], device=HOST)[:, None]
    p_start = torch.tensor([r.p_start for r in rows], device=HOST)[:, None]
    p_len = torch.tensor([r.p_len for r in rows], device=HOST)[:, None]
    k_len = p_len + q_len
    lq = _at_least(int(q_len.max()), fixed_q, "query length")
    lk = _at_least(int(k_len.max()), fixed_k, "key length")
    i = torch.arange(lq, device=HOST)[None, :]
    j = torch.arange(lk, device=HOST)[None, :]
    q_slots = torch.where(i < q_len, q_start + i, 0)
    k_slots = torch.where(j < p_len, p_start + j, torch.where(j < k_len, q_start + j - p_len, 0))
    visible = (j[:, None, :] < k_len[:, :, None]) & (j[:, None, :] <= (k_len - q_len)[:, :, None] + i[:, :, None])
    mask = torch.where((i < q_len)[:, :, None], visible, j[:, None, :] == 0)
    out_slots = torch.cat([k * lq + torch.arange(r.q_len, device=HOST) for k, r in enumerate(rows)])
    return PaddedLayout(
        q_slots=to_device(q_slots.flatten(), device),
        k_slots=to_device(k_slots.flatten(), device),
        mask=to_device(mask[:, None], device),
        out_slots=to_device(out_slots, device),
        rows=len(rows),
        lq=lq,
        lk=lk,
    )


def padded_attention(q: Tensor, k: Tensor, v: Tensor, layout: PaddedLayout, scale: float | None) -> Tensor:
    """(T, H, D) attention of the pack's queries ``q`` (T, H, D) over keys/values (T, KV, D)."""
    heads, kv, dim = q.shape[1], k.shape[1], q.shape[2]
    r, lq, lk = layout.rows, layout.lq, layout.lk
    qp = q.index_select(0, layout.q_slots).view(r, lq, heads, dim).transpose(1, 2)
    kp = k.index_select(0, layout.k_slots).view(r, lk, kv, dim).transpose(1, 2)
    vp = v.index_select(0, layout.k_slots).view(r, lk, kv, dim).transpose(1, 2)
    gqa = heads != kv
    if gqa and q.device.type != "cpu":  # the masked GPU kernels take no grouped heads; the CPU's take them
        kp, vp = kp.repeat_interleave(heads // kv, dim=1), vp.repeat_interleave(heads // kv, dim=1)
        gqa = False
    with _cpu_kernel(q.device.type, lq):
        out = F.scaled_dot_product_attention(qp, kp, vp, attn_mask=layout.mask, scale=scale, enable_gqa=gqa)
    return out.transpose(1, 2).reshape(r * lq, heads, dim).index_select(0, layout.out_slots)


def _cpu_kernel(device: str, queries: int) -> Any:
    """On a CPU, SDPA's math kernel for short rows and its flash kernel for long ones (``CPU_FLASH_MIN_QUERIES``);
    elsewhere the default choice. The backward runs the kernel its forward ran."""
    if device != "cpu":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    short = queries <= CPU_FLASH_MIN_QUERIES
    return sdpa_kernel([SDPBackend.MATH] if short else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH])


@functools.cache
def _varlen_fn() -> tuple[Callable[..., Any], dict[str, Any]] | None:
    """torch's varlen flash attention and the keywords that make it causal with grouped heads in this torch
    (2.10 took ``is_causal``, later releases a ``window_size``), or None where torch has none."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    params = inspect.signature(varlen_attn).parameters
    kw: dict[str, Any] = {"is_causal": True} if "is_causal" in params else {"window_size": (-1, 0)}
    if "enable_gqa" in params:
        kw["enable_gqa"] = True
    fn: Callable[..., Any] = varlen_attn  # a Tensor unless asked for its auxiliaries (never here)
    return fn, kw


def varlen_attention(q: Tensor, k: Tensor, v: Tensor, layout: VarlenLayout, scale: float | None) -> Tensor:
    """As ``padded_attention``, with the varlen kernel (CUDA)."""
    found = _varlen_fn()
    if found is None:
        raise RuntimeError("this torch has no varlen attention")
    fn, kw = found
    kk, vv = k.index_select(0, layout.k_index), v.index_select(0, layout.k_index)
    if "enable_gqa" not in kw and q.shape[1] != k.shape[1]:
        kk, vv = kk.repeat_interleave(q.shape[1] // k.shape[1], 1), vv.repeat_interleave(q.shape[1] // k.shape[1], 1)
    args = (q.contiguous(), kk, vv, layout.cu_q, layout.cu_k, layout.max_q, layout.max_k)
    out: Tensor = fn(*args, scale=scale, **kw)
    return out


@functools.cache
def varlen_works(device: str, dtype: torch.dtype) -> bool:
    """Whether the varlen kernel runs here and computes what the padded one does (once per process, on a small
    pack): a torch whose varlen kernel is missing, refuses the layout, or aligns its causal mask otherwise falls
    back to the padded kernel with a warning instead of failing, or training on, a job."""
    if not device.startswith("cuda") or dtype not in (torch.bfloat16, torch.float16) or _varlen_fn() is None:
        return False
    rows = (AttentionRow(0, 5), AttentionRow(5, 3), AttentionRow(8, 4, 5, 3), AttentionRow(12, 2, 5, 3))
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(14, 4, 64, device=device, dtype=dtype, generator=g)
    k, v = (torch.randn(14, 2, 64, device=device, dtype=dtype, generator=g) for _ in range(2))
    try:
        got = varlen_attention(q, k, v, varlen_layout(rows, 14, torch.device(device)), None)
    except Exception as e:  # any failure of an optional kernel means: use the other one
        log.warning("varlen attention unavailable (%s): the packed update attends padded", e)
        return False
    want = padded_attention(q, k, v, padded_layout(rows, 14, torch.device(device)), None)
    if not torch.allclose(got.float(), want.float(), atol=2e-2, rtol=2e-2):
        log.warning("varlen attention disagrees with the padded kernel: the packed update attends padded")
        return False
    return True
