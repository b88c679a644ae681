"""``compile_update``: the decoder layers under ``torch.compile`` for the update's passes, and only there.

What it buys: a decoder layer's forward and backward are dozens of small kernels (norms, RoPE, SiLU, casts, the
LoRA adapters' small matmuls) around its few large matmuls; Inductor fuses the small ones. What it costs: the
compilation, once per worker process (Inductor caches it on disk for the next job): bench.update_ab prints both
(docs/benchmarks.md). So it is off by default: it pays on long jobs and large models, not on a short job of a small
one.

How: every layer's ``forward`` is swapped for one compiled callable (dynamic shapes: a packed micro-batch's
length changes every pass) inside ``compiled_layers`` and restored after, so sampling through the policy,
validation and checkpoints run the eager model. The packed attention is never traced (its layout carries host
ints; grpo_core.update.attention): each layer is compiled around it. The update wraps its backward in the same
context: a checkpointed layer recomputes its forward there, and the recompute must save the tensors the compiled
forward did. Recompiles follow what changes the graph, not the data: grad mode (the reference and π_old passes
against the policy's), whether the adapter is enabled, checkpointing's recompute
(tests/unit/test_packing.py counts them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from grpo_core.hardware.sharding import decoder_layers

_COMPILED = "_grpo_compiled_forward"  # where a layer keeps its compiled forward between updates


@contextlib.contextmanager
def compiled_layers(model: Any, enabled: bool) -> Iterator[None]:
    """Inside, every decoder layer of ``model`` runs its compiled forward (compiled on first use)."""
    if not enabled:
        yield
        return
    layers = decoder_layers(model)
    for layer in layers:
        fn = getattr(layer, _COMPILED, None)
        if fn is None:
            fn = torch.compile(layer.forward, dynamic=True)
            setattr(layer, _COMPILED, fn)
        layer.forward = fn  # an instance attribute: shadows the class's forward until deleted
    try:
        yield
    finally:
        for layer in layers:
            del layer.forward
