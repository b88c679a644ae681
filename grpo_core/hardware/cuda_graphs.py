"""Recording a CUDA graph: what the merged sampler's decode step (grpo_core.rollout.engines.graphs) and the
update's passes (grpo_core.update.captured) both do before their first replay.

A graph records the kernels one call of ``fn`` launches. Before the recording ``fn`` runs ``WARMUP_RUNS`` times on a
side stream: cuBLAS creates its handles and workspaces and the caching allocator its blocks there, which a capture
may not do. The recording allocates from ``pool``, a memory pool the caller shares among its graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

WARMUP_RUNS = 2  # eager runs on a side stream before a capture (cuBLAS handles, allocator blocks)
T = TypeVar("T")


def record(fn: Callable[[], T], pool: Any, device: torch.device | None = None) -> tuple[Any, T]:
    """(the graph, ``fn``'s outputs as the graph writes them on every replay); raises what the capture raises."""
    current = torch.cuda.current_stream(device)
    stream: Any = torch.cuda.Stream  # unannotated in torch
    side = stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(WARMUP_RUNS):
            fn()
    current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        out = fn()
    return graph, out
