"""Matmul throughput per dtype on this machine's CPU: decides whether bf16 autocast can pay here.

    .venv/bin/python bench/matmul_dtypes.py

Prints GFLOP/s for fp32 and bf16 and their ratio (same process, same shapes, best of 5).
"""

from __future__ import annotations

import time

import torch


def gflops(dtype: torch.dtype, n: int = 2048, reps: int = 5) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def main() -> None:
    from grpo_core.hardware.device import usable_cpus

    torch.set_num_threads(usable_cpus())  # what a training job gets (cgroup quota, affinity)
    fp32, bf16 = gflops(torch.float32), gflops(torch.bfloat16)
    print(f"cpu capability: {torch.backends.cpu.get_cpu_capability()}, threads: {torch.get_num_threads()}")
    print(f"fp32 {fp32:.1f} GFLOP/s, bf16 {bf16:.1f} GFLOP/s, bf16/fp32 = {bf16 / fp32:.3f}")


if __name__ == "__main__":
    main()
