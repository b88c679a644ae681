"""The update's packed passes at a few fixed token buckets, replayed as CUDA graphs (``capture_update``).

Why: the eager update launches each of its ~6k kernels from Python (bench.update_counts), 16–20 µs of host time
apiece on a GPU, so a micro-batch that is not large enough to hide that behind its arithmetic waits on the host
(issue 44). A CUDA graph records a pass's kernels once and replays them with one launch: the reference pass and
π_old's as one graph each, the policy's forward and its backward as two (``torch.cuda.make_graphed_callables``),
the rest of the step (the loss, its small sums) eager.

What a graph needs, and how a pack meets it:

- **Fixed shapes.** A pack (grpo_core.update.packing) is padded to its ``Bucket`` (``static_pack``): its tokens,
  attention rows, longest row's queries and keys, and loss tokens, each rounded up to within 1/8 (``bucket_size``).
  Padding tokens form rows of their own that attend only themselves; padded loss tokens read position 0 and their
  log-probs are dropped before the loss, so their gradient is 0. The attention layout is built for the bucket's
  lengths (grpo_core.update.attention), so every pack of a bucket runs the very same kernels with the same
  arguments: a graph recorded with one replays any other (tests/unit/test_captured_update.py compares the ops).
- **No host decision, no sync, no host memory inside.** The host plans and packs, every copy to the device is
  queued before the pass (grpo_core.update.step), and the passes read nothing back (bench.update_counts: 0 syncs
  in them). The LoRA layers cast A and s·B inside the graph instead of from their per-version cache
  (grpo_core.update.lora_fused), autocast keeps no cache, and the fused head's recompute stashes no generator
  state: each would be read once at capture and replayed stale.
- **Captured once per bucket and pass**, the second time the bucket comes (its first pack runs eagerly: a shape
  seen once is not worth a capture): each pass runs eagerly on a side stream, is recorded, then replays; later
  packs of the bucket only replay. ``MAX_BUCKETS`` buckets are kept (the least recently used one's graphs are
  dropped for a new one): a job's micro-batches are planned to an even share of ``micro_batch_tokens``
  (grpo_core.update.step), so its packs fall in one or two buckets.
- **One memory pool for all of a model's graphs**, so they hold about one micro-batch's activations, as the eager
  update does, not one per graph. That is safe because the update keeps two rules: every pass's outputs are read
  (scattered into the micro-batch's layout) before the next replay, and nothing replays between a policy
  forward and its backward. The pool is not handed back between updates: ``capture_update`` auto stays off where
  a vLLM engine wakes on the same GPU into the memory the update frees (grpo_core.update.step.update_path).
- **The same parameters.** A graph reads the parameters at their addresses: the optimizer steps them in place, a
  loaded adapter is copied into them; a parameter given new storage changes its address, and the graphs are
  captured again.

With ``graphs=False`` (a CPU, or a capture that failed: ``UpdateGraphs.failure``, the job goes on eagerly) the very
same padded passes run eagerly: that is how the tests check on a CPU what a graph would replay.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.cuda_graphs import WARMUP_RUNS, record
from grpo_core.hardware.device import HOST
from grpo_core.update.attention import AttentionRow
from grpo_core.update.lora_fused import capture_problem as lora_problem
from grpo_core.update.lora_fused import reference_on
from grpo_core.update.packing import Bucket, Packed

log = logging.getLogger(__name__)
MAX_BUCKETS = 4  # buckets whose graphs are kept at once (their memory is one shared pool)
CAPTURE_AFTER = 2  # a pass is captured the second time its bucket comes
_MIN_TOKENS = 16
_GRAPHS = "_grpo_update_graphs"  # where a model keeps its graphs between updates
Pass = Callable[[Packed], tuple[Tensor, Tensor | None]]  # a pack's (loss-token log-probs, entropies)


def bucket_size(n: int, minimum: int = _MIN_TOKENS) -> int:
    """``n`` rounded up to a multiple of 1/16 of the next power of two (within 1/8 of ``n``), at least
    ``minimum``: a few buckets per doubling, so a job captures few graphs and pads little."""
    if n <= minimum:
        return minimum
    top = 1 << (n - 1).bit_length()
    step = max(1, top >> 4)
    return -(-n // step) * step


def bucket_of(packed: Packed) -> Bucket:
    """The smallest bucket that holds ``packed`` and room for at least one padding row."""
    rows = packed.attention
    lq = bucket_size(max(r.q_len for r in rows))
    lk = bucket_size(max(r.p_len + r.q_len for r in rows))
    tokens = packed.input_ids.shape[1]
    width = min(lq, lk)  # the longest padding row the layout's lengths allow
    count = 1 << len(rows).bit_length()  # > len(rows): one padding row at least
    while True:
        total = bucket_size(tokens + count - len(rows))
        if -(-(total - tokens) // (count - len(rows))) <= width:
            break
        count *= 2  # the padding does not fit in that many rows of the allowed width
    return Bucket(tokens=total, rows=count, queries=lq, keys=lk, loss_tokens=bucket_size(packed.targets.shape[0]))


def static_pack(packed: Packed, bucket: Bucket | None = None) -> Packed:
    """``packed`` (on the host) padded to ``bucket`` (``bucket_of`` by default): padding tokens (id 0) in rows of
    their own, as even as the row count allows, and padded loss tokens reading position 0; ``rows``/``cols`` keep
    the real loss tokens only, which ``Packed.loss_tokens`` counts."""
    if packed.layout is not None:
        raise ValueError("static_pack pads a pack on the host, before Packed.to")
    b = bucket or bucket_of(packed)
    tokens, n = packed.input_ids.shape[1], packed.targets.shape[0]
    pad_rows, pad = b.rows - len(packed.attention), b.tokens - tokens
    longest = max(r.q_len for r in packed.attention), max(r.p_len + r.q_len for r in packed.attention)
    if pad_rows < 1 or pad < pad_rows or n > b.loss_tokens or longest[0] > b.queries or longest[1] > b.keys:
        raise ValueError(f"a pack of {tokens} tokens in {len(packed.attention)} rows does not fit {b}")
    lengths = [pad // pad_rows + (1 if k < pad % pad_rows else 0) for k in range(pad_rows)]
    if max(lengths) > min(b.queries, b.keys):
        raise ValueError(f"{b} leaves padding rows longer than its rows")
    extra, at = [], tokens
    for length in lengths:
        extra.append(AttentionRow(at, length))
        at += length
    zeros = torch.zeros(b.loss_tokens - n, dtype=torch.long, device=HOST)
    positions = torch.cat([torch.arange(length, device=HOST) for length in lengths])
    return dataclasses.replace(
        packed,
        input_ids=torch.cat([packed.input_ids, torch.zeros(1, pad, dtype=torch.long, device=HOST)], dim=1),
        position_ids=torch.cat([packed.position_ids, positions.unsqueeze(0)], dim=1),
        attention=(*packed.attention, *extra),
        source=torch.cat([packed.source, zeros]),
        targets=torch.cat([packed.targets, zeros]),
        bucket=b,
    )


def capture_problem(model: Any, device: torch.device) -> str | None:
    """Why ``model``'s packed passes cannot be replayed as graphs on ``device``, or None when they can."""
    if device.type != "cuda":
        return f"CUDA graphs need a CUDA device, not {device.type}"
    if any(getattr(m, "gradient_checkpointing", False) for m in model.modules()):
        return "gradient checkpointing recomputes layers in the backward (captured only without it)"
    return lora_problem(model)


def capture_by_default(model: Any, device: torch.device, *, compile_update: bool, engine_wakes: bool) -> bool:
    """``capture_update: auto``: where the graphs can replay (``capture_problem``) and may keep their memory
    between updates (not where a vLLM engine wakes on the same GPU into what the update frees), and the layers
    are not compiled instead."""
    return not (engine_wakes or compile_update) and capture_problem(model, device) is None


def _tensors(packed: Packed) -> list[Tensor]:
    """The pack's device tensors a pass reads, in a fixed order (its layout's included)."""
    layout = packed.layout
    found = [packed.input_ids, packed.position_ids, packed.source, packed.targets]
    fields = dataclasses.fields(layout) if layout is not None else ()
    return found + [getattr(layout, f.name) for f in fields if isinstance(getattr(layout, f.name), Tensor)]


def _with_tensors(packed: Packed, tensors: list[Tensor] | tuple[Tensor, ...]) -> Packed:
    """``packed`` reading ``tensors`` (``_tensors``' order): a graph's static inputs in place of a pack's."""
    ids, pos, source, targets, *rest = tensors
    layout = packed.layout
    assert layout is not None
    values = {f.name: getattr(layout, f.name) for f in dataclasses.fields(layout)}
    names = [name for name, value in values.items() if isinstance(value, Tensor)]
    moved = type(layout)(**(values | dict(zip(names, rest, strict=True))))
    return dataclasses.replace(packed, input_ids=ids, position_ids=pos, source=source, targets=targets, layout=moved)


class _Forward(torch.nn.Module):
    """A pass as a module whose parameters are the model's: ``make_graphed_callables`` differentiates the graph
    with respect to a module's parameters."""

    def __init__(self, model: Any, run: Pass, template: Packed) -> None:
        super().__init__()
        self.model = model
        self._run, self._template = run, template

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        logp, entropy = self._run(_with_tensors(self._template, tensors))
        return (logp,) if entropy is None else (logp, entropy)


class _Replay:
    """One pass of one bucket: its graph(s) and static inputs."""

    def __init__(self, model: Any, run: Pass, packed: Packed, pool: Any) -> None:
        inputs = tuple(t.clone() for t in _tensors(packed))
        if torch.is_grad_enabled():  # the forward and the backward, each one graph
            shared = {"pool": pool} if "pool" in inspect.signature(torch.cuda.make_graphed_callables).parameters else {}
            graphed: Any = torch.cuda.make_graphed_callables(
                _Forward(model, run, packed), inputs, num_warmup_iters=WARMUP_RUNS, allow_unused_input=True, **shared
            )
            self._call: Callable[..., tuple[Tensor, ...]] = graphed
            self._graph = None
        else:  # one graph
            self._graph, self._outputs = record(functools.partial(_Forward(model, run, packed), *inputs), pool)
            self._inputs = inputs

    def __call__(self, packed: Packed) -> tuple[Tensor, Tensor | None]:
        if self._graph is None:
            out = self._call(*_tensors(packed))
        else:
            for static, new in zip(self._inputs, _tensors(packed), strict=True):
                static.copy_(new, non_blocking=True)
            self._graph.replay()
            out = self._outputs
        return out[0], out[1] if len(out) > 1 else None


class UpdateGraphs:
    """A model's captured passes, by bucket and by what changes a pass's kernels (grad mode, the reference
    switch, autocast, the options); ``failure``: why capturing stopped (the passes then run eagerly). A pass is
    captured the second time its bucket comes (``CAPTURE_AFTER``): a job's steady buckets come every step, and a
    one-off shape (the last micro-batch of a step, a training API call of its own size) costs no capture."""

    def __init__(self) -> None:
        self.failure: str | None = None
        self.captures = 0
        self._buckets: OrderedDict[Bucket, dict[tuple[Any, ...], _Replay]] = OrderedDict()
        self._seen: Counter[tuple[Any, ...]] = Counter()
        self._params: list[Tensor] = []
        self._weights: tuple[int, ...] = ()
        self._pool: Any = None

    def run(self, model: Any, run: Pass, packed: Packed, options: tuple[Any, ...]) -> tuple[Tensor, Tensor | None]:
        """``run(packed)``, replayed from its graph (captured when its bucket comes again); eagerly when
        ``packed`` has no bucket, before its capture, or once capturing failed."""
        if packed.bucket is None or self.failure is not None:
            return run(packed)
        device = packed.input_ids.device.type
        autocast = torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device)
        key = (torch.is_grad_enabled(), reference_on(model), autocast, packed.layout.__class__.__name__, *options)
        self._params = self._params or list(model.parameters())  # one walk of the modules per model, not per pass
        weights = tuple(p.data_ptr() for p in self._params)
        if weights != self._weights:  # new parameter storage: a graph would read the old one
            self._buckets.clear()
            self._weights = weights
        replay = self._buckets.get(packed.bucket, {}).get(key)
        if replay is None:
            self._seen[(packed.bucket, *key)] += 1
            if self._seen[(packed.bucket, *key)] < CAPTURE_AFTER:
                return run(packed)
            replay = self._capture(model, run, packed, key)
            if replay is None:
                return run(packed)
        self._buckets.move_to_end(packed.bucket)
        return replay(packed)

    def _capture(self, model: Any, run: Pass, packed: Packed, key: tuple[Any, ...]) -> _Replay | None:
        """``run``'s graph for ``packed``'s bucket, kept under ``key``; None when the capture failed (``failure``)."""
        assert packed.bucket is not None
        graphs = self._buckets.setdefault(packed.bucket, {})
        self._buckets.move_to_end(packed.bucket)
        while len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)  # its graphs go; their memory stays in the shared pool
        try:
            with torch.cuda.device(packed.input_ids.device):  # the model's GPU, whichever is current
                self._pool = self._pool or torch.cuda.graph_pool_handle()
                replay = graphs[key] = _Replay(model, run, packed, self._pool)
        except Exception as e:  # a capture that fails must not fail the job: it trains on, eagerly
            self.failure = f"{type(e).__name__}: {e}"
            self._buckets.clear()
            log.warning("capturing the update failed (%s): it runs eagerly", self.failure)
            return None
        self.captures += 1
        return replay


def update_graphs(model: Any) -> UpdateGraphs | None:
    """The model's graphs while ``captured_passes`` is on, else None."""
    graphs: UpdateGraphs | None = getattr(model, _GRAPHS, None)
    return graphs if graphs is not None and getattr(model, _GRAPHS + "_on", False) else None


@contextlib.contextmanager
def captured_passes(model: Any, enabled: bool) -> Iterator[UpdateGraphs | None]:
    """Inside, ``model``'s bucketed packed passes replay from its graphs (kept on the model between updates)."""
    if not enabled:
        yield None
        return
    graphs: UpdateGraphs | None = getattr(model, _GRAPHS, None)
    if graphs is None:
        graphs = UpdateGraphs()
        object.__setattr__(model, _GRAPHS, graphs)  # not a submodule: a plain attribute
    object.__setattr__(model, _GRAPHS + "_on", True)
    try:
        yield graphs
    finally:
        object.__setattr__(model, _GRAPHS + "_on", False)
