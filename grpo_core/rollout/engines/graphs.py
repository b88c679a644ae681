"""Decode steps on static buffers, replayed as CUDA graphs: the merged sampler's per-token forward on a GPU.

Why: on a GPU a decode step of a small or mid-sized model is launch-bound. transformers' forward issues a few
hundred small kernels per token from Python (norms, projections, rotary embedding, attention, MLP, per layer), and
the GPU waits for the launches, not for the arithmetic. A CUDA graph records one decode step's kernels once and
replays them with a single launch per token (vLLM and SGLang capture their decode the same way).

What a graph needs, and how this module meets it:

- **Fixed shapes and addresses.** A batch of ``n`` rows runs padded to a bucket (``batch_bucket``); every tensor
  the step reads or writes lives in buffers a ``StaticDecoder`` allocates once: per layer the KV cache at
  (rows, kv heads, capacity, head dim), and the fed token, its position, the cache column it is written to and the
  attention mask over the whole capacity. A smaller bucket uses the leading rows of the same buffers, so one KV
  allocation serves every bucket.
- **No host decision inside the step.** The model gets a 4D boolean mask (transformers passes a 4D mask through
  as-is and builds none), explicit position ids, and a cache whose layers write at the column held in a device
  tensor (``_SlotLayer``); nothing in the forward reads a Python-side length, so the recorded kernels are right for
  every later token. Sampling (temperature, nucleus, the counter-based draw of grpo_core.rollout.engines.noise)
  runs eagerly on the replayed logits: a handful of kernels per token, and its inputs change every step.
- **Captured once per bucket per engine, i.e. once per job.** The first step of a bucket runs the step twice on a
  side stream (cuBLAS and the caching allocator warm up; the step is idempotent: it rewrites the same cache column
  and mask entry), records it, then replays it. Every later token of every later rollout only replays. The
  buffers grow, and every graph is captured again, only when a rollout needs more rows or positions than they
  hold; capacity grows in steps of ``CAPACITY_STEP`` positions, so a job recaptures a bounded number of times.

Attention then runs over the whole capacity every token with the unused columns masked: for the prompt lengths and
budgets of RL jobs (hundreds to a few thousand positions) this costs little next to the projections, and it is
what keeps the shapes fixed. The unused columns hold zeros or an earlier rollout's finite keys/values, never
uninitialised memory, because a masked column still enters the softmax's weighted sum with weight 0 (0 · NaN is
NaN).

With ``graphs=False`` the very same step function is called eagerly on the same buffers: that is how tests check
the bookkeeping (buckets, buffers, columns, masks) on a CPU, and what runs if a capture fails (the reason is kept
in ``StaticDecoder.failure`` and the job samples correctly, only slower). Models whose cache has layers other
than plain full attention (sliding windows, linear attention), that attend with something other than SDPA, or whose
rotary embedding depends on the sequence length are not handled here (``unsupported_reason``); the merged engine
keeps its eager loop for them. The decode steps attend through ``_decode_attention``: the grouped query heads of
one new token against the unexpanded cache.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.cuda_graphs import record
from grpo_core.models.catalog import length_dependent_rope

CAPACITY_STEP = 256  # positions: the KV buffers grow in these steps (a job recaptures a bounded number of times)
_SMALL_BUCKETS = (1, 2, 4, 8)


def batch_bucket(rows: int) -> int:
    """The captured batch size that holds ``rows``: 1, 2, 4, 8, then multiples of 16 up to 256, then of 64.

    A bucket is a graph (and its activation memory); the steps between buckets bound the padded rows' waste at
    under 16 rows (under 25 % above 64 rows)."""
    if rows < 1:
        raise ValueError(f"a decode step needs at least one row, not {rows}")
    for size in _SMALL_BUCKETS:
        if rows <= size:
            return size
    step = 16 if rows <= 256 else 64
    return -(-rows // step) * step


def capacity_bucket(positions: int) -> int:
    """``positions`` rounded up to a multiple of ``CAPACITY_STEP``."""
    return -(-max(positions, 1) // CAPACITY_STEP) * CAPACITY_STEP


_DECODE_ATTENTION = "grpo_static_decode"  # the attention the decode steps run with (``_decode_attention``)


def _decode_attention(
    module: Any, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None, **kwargs: Any
) -> tuple[Tensor, None]:
    """SDPA for one new token per row against the whole static cache, without expanding the grouped K/V.

    transformers' SDPA path repeats every key/value head for its query heads (``repeat_kv``) whenever a mask is
    given on CUDA: on static buffers that is a copy of the whole cache, per layer, per token. With one query
    position, the query heads that share a key/value head can stand as that head's query positions instead:
    ``q`` (B, H, 1, D) viewed as (B, KV, H/KV, D) attends to ``key``/``value`` (B, KV, cap, D) under the (B, 1, 1,
    cap) mask, which holds for every one of them. The same sums, no copy (heads are grouped as ``repeat_kv``
    orders them: head h reads key/value head h // (H/KV)). Anything else goes to transformers' own SDPA."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    b, heads, q_len, dim = query.shape
    groups = key.shape[1]
    if q_len != 1 or attention_mask is None or attention_mask.dim() != 4 or heads % groups:
        out: tuple[Tensor, None] = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return out
    q = query.view(b, groups, heads // groups, dim)
    scale = kwargs.get("scaling")
    o = torch.nn.functional.scaled_dot_product_attention(q, key, value, attn_mask=attention_mask, scale=scale)
    return o.reshape(b, heads, 1, dim).transpose(1, 2).contiguous(), None  # (B, 1, H, D), as transformers returns


def _register_decode_attention() -> None:
    """Make ``_DECODE_ATTENTION`` a name transformers' models attend (and build masks) with; idempotent."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(_DECODE_ATTENTION, _decode_attention)
    AttentionMaskInterface.register(_DECODE_ATTENTION, sdpa_mask)


def unsupported_reason(model: Any) -> str | None:
    """Why ``model``'s decode step cannot run on static buffers, or None when it can: every cache layer must be a
    plain full-attention layer (transformers' ``DynamicLayer``) and attention must be SDPA (a boolean mask)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "sdpa":
        return f"it attends with {impl!r}, not 'sdpa'"
    rope_type = length_dependent_rope(model.config)
    if rope_type is not None:
        return f"its RoPE ({rope_type}) depends on the sequence length"
    layers = DynamicCache(config=model.config).layers
    if not layers:
        return "its cache does not say what its layers are"
    other = sorted({type(x).__name__ for x in layers if type(x) is not DynamicLayer})
    if other:
        return f"its cache has {', '.join(other)} layers (only full attention runs on static buffers)"
    return None


class _SlotLayer:
    """One layer's KV cache on static buffers: ``update`` writes the new token's keys/values at the column held in
    the shared ``column`` tensor and returns the whole buffers (the mask hides the unused columns).

    Duck-typed to transformers' cache-layer interface (``Cache.update`` calls ``update``); the other methods answer
    the questions transformers may ask of a layer, though with explicit positions and a 4D mask it asks none."""

    is_compileable = True
    is_sliding = False
    is_initialized = True

    def __init__(self, keys: Tensor, values: Tensor, column: Tensor) -> None:
        self.keys, self.values, self.column = keys, values, column

    def update(self, key_states: Tensor, value_states: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        self.keys.index_copy_(2, self.column, key_states)
        self.values.index_copy_(2, self.column, value_states)
        return self.keys, self.values

    def lazy_initialization(self, key_states: Tensor, value_states: Tensor) -> None:
        """Nothing to do: the buffers exist before the first step."""

    def get_mask_sizes(self, query_length: int, *args: Any) -> tuple[int, int]:
        return int(self.keys.shape[2]), 0

    def get_seq_length(self) -> int:
        return int(self.keys.shape[2])

    def get_max_length(self) -> int:
        return int(self.keys.shape[2])


class DecodeRun:
    """One rollout's decode steps on a ``StaticDecoder``: ``logits()`` gives the (n, V) fp32 logits of the position
    after the fed tokens; ``feed(tokens)`` puts the next (n,) tokens in and advances position and column.

    ``check_every``: finished rows are checked for every this many tokens (grpo_core.rollout.engines.decode). The
    check waits for the GPU, and a replayed step is short enough that a wait per token would leave the GPU idle
    while the next launches are queued; the tokens past the step where every row had finished are cut off
    afterwards, so the rollout is the same as with a check per token."""

    check_every = 8

    def __init__(self, decoder: StaticDecoder, rows: int, bucket: int) -> None:
        self._decoder, self.rows, self.bucket = decoder, rows, bucket

    def logits(self) -> Tensor:
        return self._decoder.run_step(self.bucket)[: self.rows]

    def feed(self, tokens: Tensor) -> None:
        d = self._decoder
        d.tokens[: self.rows, 0].copy_(tokens)
        d.position.add_(1)
        d.column.add_(1)


class StaticDecoder:
    """The static buffers and captured graphs of one engine's decode steps (see the module doc).

    ``graphs``: record each bucket's step as a CUDA graph and replay it (CUDA only); False runs the same step
    eagerly on the same buffers. ``captures`` counts the graphs recorded, ``allocations`` the times the buffers
    were (re)allocated; ``failure`` says why graphs were turned off, if a capture failed."""

    def __init__(self, model: Any, *, graphs: bool) -> None:
        reason = unsupported_reason(model)
        if reason is not None:
            raise ValueError(f"static decoding is not available for this model: {reason}")
        _register_decode_attention()
        self.model = model
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        if graphs and self.device.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device; the model is on {self.device}")
        self.graphs = graphs
        c = model.config
        self.layers = int(c.num_hidden_layers)
        self.kv_heads = int(getattr(c, "num_key_value_heads", None) or c.num_attention_heads)
        self.head_dim = int(getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads)
        self.rows = self.capacity = 0
        self.captures = self.allocations = 0
        self.failure: str | None = None
        self._steps: dict[int, Callable[[], Tensor]] = {}  # per bucket, on the current buffers
        self._graphs: dict[int, tuple[Any, Tensor]] = {}
        self._pool: Any = None

    def reserve(self, rows: int, positions: int) -> None:
        """Buffers for at least ``rows`` rows (rounded up to their bucket) of ``positions`` positions (rounded up to
        ``CAPACITY_STEP``); a no-op when the current ones hold them, else a new allocation and, later, new graphs."""
        rows, capacity = batch_bucket(rows), capacity_bucket(positions)
        if rows <= self.rows and capacity <= self.capacity:
            return
        rows, capacity = max(rows, self.rows), max(capacity, self.capacity)
        self._steps.clear()
        self._graphs.clear()
        self._pool = None  # a new pool for the new graphs: blocks of the old one may still be alive
        self.k = self.v = []  # drop the old buffers before the new ones are allocated
        kv = (rows, self.kv_heads, capacity, self.head_dim)
        # zeros: a masked column still enters attention's weighted sum with weight 0, and 0 · NaN is NaN
        self.k = [torch.zeros(kv, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        self.v = [torch.zeros(kv, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        self.tokens = torch.zeros((rows, 1), dtype=torch.long, device=self.device)
        self.position = torch.zeros((rows, 1), dtype=torch.long, device=self.device)
        self.column = torch.zeros((1,), dtype=torch.long, device=self.device)
        self.valid = torch.zeros((rows, 1, 1, capacity), dtype=torch.bool, device=self.device)
        self.rows, self.capacity = rows, capacity
        self.allocations += 1

    def prepare(self, rows: int, positions: int) -> None:
        """``reserve``, and with graphs capture the step of ``rows``' bucket now: the job's buffers and its main
        graph (and the activation memory the graph holds) exist before anything sizes itself from the free memory.
        The capture runs the step on the fresh buffers (every mask entry off but the written column), which every
        rollout's ``start`` overwrites."""
        self.reserve(rows, positions)
        if self.graphs:
            with torch.inference_mode():
                self.run_step(batch_bucket(rows))

    def start(self, prefix: Any, ids: Tensor, mask: Tensor, max_new_tokens: int, group_size: int = 1) -> DecodeRun:
        """A rollout of ``ids``/``mask`` (n, P) (left-padded; rows grouped by prompt, ``group_size`` each) that
        decodes up to ``max_new_tokens`` tokens. ``prefix``: the cache of every prompt token but the last, one row
        per distinct prompt ((n / group_size, kv heads, P - 1, head dim) per layer; None when P = 1), copied into
        every row of its group by broadcasting, so no repeated copy of it is ever made. The last prompt tokens are
        ready to feed."""
        n, width = ids.shape
        self.reserve(n, width + max_new_tokens)
        bucket = batch_bucket(n)
        if width > 1:
            groups = n // group_size
            for i, layer in enumerate(prefix.layers):
                for buf, src in ((self.k[i], layer.keys), (self.v[i], layer.values)):
                    rows = buf[:n].view(groups, group_size, *buf.shape[1:])  # the leading rows are contiguous
                    rows[:, :, :, : width - 1].copy_(src[:, None, :, : width - 1])
        self.valid[:bucket].zero_()
        self.valid[:n, 0, 0, :width].copy_(mask.bool())
        self.tokens[:bucket].zero_()
        self.tokens[:n, 0].copy_(ids[:, -1])
        self.position[:bucket].zero_()
        self.position[:n, 0].copy_((mask.sum(dim=1) - 1).clamp(min=0))
        self.column.fill_(width - 1)
        return DecodeRun(self, n, bucket)

    def _step_fn(self, bucket: int) -> Callable[[], Tensor]:
        """The decode step of the first ``bucket`` rows: the fed token's column becomes visible, one forward, the
        next position's logits in fp32. Everything it touches is a fixed buffer or a view of one."""
        known = self._steps.get(bucket)
        if known is not None:
            return known
        from transformers import DynamicCache

        cache: Any = DynamicCache(config=self.model.config)  # its layers are replaced below
        cache.layers = [_SlotLayer(k[:bucket], v[:bucket], self.column) for k, v in zip(self.k, self.v, strict=True)]
        tokens, position, valid = self.tokens[:bucket], self.position[:bucket], self.valid[:bucket]

        config = self.model.config

        def step() -> Tensor:
            valid.index_fill_(3, self.column, True)
            sdpa, config._attn_implementation = config._attn_implementation, _DECODE_ATTENTION
            try:  # host-side only: a captured graph holds the kernels this call launches
                out = self.model(
                    input_ids=tokens,
                    attention_mask=valid,
                    position_ids=position,
                    past_key_values=cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
            finally:
                config._attn_implementation = sdpa
            logits: Tensor = out.logits[:, -1, :].float()
            return logits

        self._steps[bucket] = step
        return step

    def run_step(self, bucket: int) -> Tensor:
        """The logits of one decode step of the first ``bucket`` rows: the bucket's graph replayed (captured on its
        first use), or the step run eagerly when graphs are off."""
        if not self.graphs:
            return self._step_fn(bucket)()
        captured = self._graphs.get(bucket)
        if captured is None:
            captured = self._capture(bucket)
            if captured is None:  # the capture failed: this engine runs eagerly from now on
                return self._step_fn(bucket)()
            self._graphs[bucket] = captured
        graph, out = captured
        graph.replay()
        return out

    def _capture(self, bucket: int) -> tuple[Any, Tensor] | None:
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()  # one activation pool shared by every bucket's graph
        try:
            graph, out = record(self._step_fn(bucket), self._pool, self.device)
        except RuntimeError as exc:  # a kernel that cannot be captured: keep sampling, without graphs
            self.failure = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            self.graphs = False
            self._graphs.clear()
            warnings.warn(
                f"CUDA graph capture of the merged sampler's decode step failed ({self.failure}); it decodes "
                "eagerly on the same buffers (correct, slower)",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        self.captures += 1
        return graph, out
