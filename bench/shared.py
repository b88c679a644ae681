"""What every side of bench/grpo_vs_trl.py and the benches beside it share: the task (the demo's arithmetic rows
and a last-number reward, as TRL's reward function and as our grader), the model folder, and the readers of a
step's end, its memory and a side's peak RSS.

Kept apart from the sides (bench/sides.py, bench/trl_side.py) so each side imports only this, never the other.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODELS = Path(".state/models")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def last_number_reward(text: str, answer: str) -> float:
    """1.0 when the last number in ``text`` equals ``answer``, else 0.0."""
    nums = _NUMBER.findall(text)
    return 1.0 if nums and float(nums[-1]) == float(answer) else 0.0


def reward_last_number(completions: list[Any], answer: list[str], **kw: Any) -> list[float]:
    """TRL's reward function signature: dataset columns arrive as keyword lists."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [last_number_reward(t, a) for t, a in zip(texts, answer, strict=True)]


class LastNumber:
    """The same reward as a grpo_core grader."""

    name = "last_number"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> Any:
        from grpo_core.rewards.base import GraderResult

        return GraderResult([last_number_reward(t, r["answer"]) for t, r in zip(texts, rows, strict=True)])

    def close(self) -> None:
        pass


def bench_rows(seed: int, n: int = 64) -> list[dict[str, Any]]:
    """``n`` of the demo's arithmetic rows (scripts/demo.py), drawn from ``seed``: every side trains on these."""
    from scripts.demo import make_rows

    return make_rows(random.Random(seed), n)


def maxrss_mb() -> float:
    """Peak RSS of this process plus the largest of its finished children (vLLM's engine processes), in MB: an
    upper bound of the side's combined peak."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024  # KiB on Linux


def side_model_dir(a: argparse.Namespace) -> Path:
    """The model folder the parent chose (``a.model_path``: prepared or checked before the sides start), with torch
    on every CPU of this side's process."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    return Path(a.model_path)


def step_end(device: str) -> float:
    """perf_counter() once the step's work is done: on CUDA after the queued kernels (the optimizer step, the
    engine's weight sync) have run, so a step's time does not leak into the pause before the next one."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    return time.perf_counter()


def device_stats(device: str) -> dict[str, float | None]:
    """The step's GPU memory, read at its end (the peak counter was reset at its start): the peak of tensors
    allocated in this process (torch.cuda.max_memory_allocated) and what NVML sees the side's processes hold.
    Empty on the CPU, where the side's peak RSS at the end of the run is the figure."""
    if device != "cuda":
        return {}
    import torch

    from bench.gpu import process_tree_gpu_mb

    return {"cuda_peak_mb": torch.cuda.max_memory_allocated() / 2**20, "gpu_process_mb": process_tree_gpu_mb()}
