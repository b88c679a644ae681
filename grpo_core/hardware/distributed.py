"""One job on many processes: data-parallel GRPO on ``torch.distributed``, launched by ``torchrun``.

The world is read from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``);
without it the world is one process and every collective below is the identity, so the trainer has one code path.
Backend: NCCL when the ranks train on CUDA devices (rank r on ``cuda:LOCAL_RANK``), gloo on CPU.

How a step is split, and why the maths is the same as one process (grpo_core.trainer, grpo_core.update.step):

- *Sampling and scoring*: the step's prompts (the same list on every rank: the data cursor is seeded) are cut in
  contiguous shares, whole groups per rank (``World.shard``); each rank samples and scores its share, then the
  share's rollout and scores are all-gathered, so every rank holds the step's whole batch in one-process order.
  Everything after that (GFPO, dynamic sampling, shaping, advantages with group *or* batch statistics, REINFORCE++
  whitening, metrics) runs on identical data on every rank, with no further communication and no special case.
  A rollout is a function of (weights, prompt, seed, the row's global position), never of which rank drew it
  (grpo_core.rollout.engines.noise), so the batch is the one a single process would have sampled.
- *Update*: the micro-batches are planned over the whole batch, identically on every rank (the size agreed: the
  smallest any rank's memory allows), and dealt in a snake order to the ranks (``World.owns``); where a micro-batch's
  composition matters (bnpo, the top-entropy mask) they are one process's, elsewhere their size is capped so that
  every rank gets work, which changes no sum; the loss normalisers are the step's global counts (sequences, tokens,
  micro-batches). Each rank backpropagates its micro-batches, and the LoRA gradients are summed across ranks
  (``all_reduce_sum_``: one flat bucket, the collective DDP issues). The sum of every micro-batch's gradient is
  the one-process gradient for every loss aggregation, ``bnpo`` included, because the micro-batches are the same
  ones. Only the order of the additions differs, and it cannot show: the micro-batch gradients are accumulated and
  all-reduced in fp64 and rounded to fp32 once (in fp32 the order's rounding is amplified by Adam where a gradient
  is near 0, into weight differences tests/distributed/test_exactness.py would see).
- *Optimizer*: every rank applies the same step to the same weights (AdamW is deterministic), so the replicas
  never drift; rank 0's weights are broadcast once at the start (as DDP does) in case a model load differed.

Why not ``DistributedDataParallel``'s wrapper: the update calls the model's layers directly (prefix sharing, the
adapter-disabled reference pass, gradient checkpointing toggled around the update) and accumulates many
micro-batches per step; DDP's hooks assume ``module(...)`` calls and would need ``no_sync`` on all but the last
micro-batch. For a LoRA adapter (a few MB of gradients) one all-reduce per step costs far less than the step, so
DDP's overlap of communication with backward buys little (bench/distributed.py measures the bytes).
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch

from grpo_core.errors import PeerLost, is_out_of_memory

T = TypeVar("T")

# How long a collective may wait for a peer before the process group fails: a rank that died is noticed by torchrun
# first; this bounds a rank stuck without dying. It must outlast rank 0's own work between two collectives, which
# includes posting events and uploading a checkpoint through the worker's API client: 8 tries of up to 60 s with
# backoff, ~9.5 min at worst during an API outage. 20 min leaves that twice over, so an outage is reported as
# the API's, not as "a training process died".
TIMEOUT = timedelta(seconds=int(os.environ.get("RFT_DIST_TIMEOUT_SECONDS", "1200")))


@dataclass(frozen=True)
class World:
    """Where this process stands among the job's processes (ranks)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1

    @classmethod
    def from_env(cls) -> World:
        """torchrun's variables, or a world of one process when they are absent."""
        env = os.environ
        size = int(env.get("WORLD_SIZE", "1"))
        return cls(
            rank=int(env.get("RANK", "0")),
            size=size,
            local_rank=int(env.get("LOCAL_RANK", "0")),
            local_size=int(env.get("LOCAL_WORLD_SIZE", str(size))),
        )

    @property
    def is_main(self) -> bool:
        """Rank 0: the one rank that reports (events, checkpoints, uploads)."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def shard(self, n: int) -> tuple[int, int]:
        """This rank's contiguous share [lo, hi) of ``n`` items; the first ``n % size`` ranks get one more."""
        base, extra = divmod(n, self.size)
        lo = self.rank * base + min(self.rank, extra)
        return lo, lo + base + (1 if self.rank < extra else 0)

    def owns(self, micro_batch: int) -> bool:
        """Whether micro-batch ``k`` of a step (planned over the whole batch, sorted by length) is this rank's: dealt
        in a snake order (0, 1, …, N−1, N−1, …, 0, 0, …), so no rank always gets the longest of each round (a
        plain round-robin made the last rank's update the slowest every step: bench/distributed.py)."""
        turn, pos = divmod(micro_batch, self.size)
        return (pos if turn % 2 == 0 else self.size - 1 - pos) == self.rank


def init(world: World, device: torch.device) -> bool:
    """Join the process group of ``world`` (NCCL for CUDA devices, gloo otherwise); returns whether this call
    created it (the caller then destroys it). A world of one needs no group."""
    import torch.distributed as dist

    if not world.distributed or dist.is_initialized():
        return False
    if device.type == "cuda":
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=TIMEOUT, device_id=device)
    else:
        dist.init_process_group("gloo", timeout=TIMEOUT)
    return True


def destroy() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


@contextlib.contextmanager
def process_group(world: World, device: torch.device) -> Iterator[None]:
    """In the process group of ``world`` for the duration (joined and left here unless the caller already had
    one); nothing for a world of one."""
    created = init(world, device)
    try:
        yield
    finally:
        if created:
            destroy()


@contextlib.contextmanager
def _collective(what: str) -> Iterator[None]:
    """A collective whose failure means a peer is gone: gloo and NCCL raise RuntimeError (DistBackendError is
    one) when a peer closed its connection or timed out; it becomes ``PeerLost``, so the launcher does not take
    this rank's failure for the cause. The block also holds the read of the result (``.item()``, ``.tolist()``,
    the copy back), where an asynchronous backend reports a failure; the worker runs NCCL with blocking waits,
    so it raises inside the collective itself. Out of memory is this rank's own failure (NCCL's object
    collectives stage the payload on the GPU; the CPU allocator says "can't allocate memory") and stays so."""
    try:
        yield
    except RuntimeError as exc:  # torch.OutOfMemoryError is one
        if is_out_of_memory(exc):
            raise
        raise PeerLost(f"{what} failed: another rank of the job is gone ({type(exc).__name__}: {exc})") from exc


def _comm_device(tensor_device: torch.device) -> torch.device:
    """Where a collective's tensor must live: the GPU for NCCL, the CPU for gloo."""
    import torch.distributed as dist

    return tensor_device if dist.get_backend() == "nccl" else torch.device("cpu")


def all_gather_objects(world: World, obj: T) -> list[T]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` in a world of one."""
    if not world.distributed:
        return [obj]
    import torch.distributed as dist

    out: list[Any] = [None] * world.size
    with _collective("all_gather_object"):
        dist.all_gather_object(out, obj)
    return out


def any_rank(world: World, flag: bool, device: torch.device) -> bool:
    """True when ``flag`` is True on at least one rank (every rank gets the same answer)."""
    if not world.distributed:
        return flag
    import torch.distributed as dist

    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=_comm_device(device))
    with _collective("all_reduce"):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())


def agree_min(world: World, value: int, device: torch.device) -> int:
    """The smallest of the ranks' ``value`` on every rank (a size each rank chose from its own device's free
    memory, which every rank must then share)."""
    if not world.distributed:
        return value
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.int64, device=_comm_device(device))
    with _collective("all_reduce"):
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())


def reduce_sums(world: World, sums: dict[str, float], device: torch.device) -> dict[str, float]:
    """Per-key sums across ranks; keys ending in ``_max`` take the maximum. Every rank must pass the same keys
    (missing ones count as 0), so the packed tensor lines up."""
    if not world.distributed:
        return sums
    import torch.distributed as dist

    keys = sorted(set().union(*all_gather_objects(world, sorted(sums))))
    dev = _comm_device(device)
    add = [k for k in keys if not k.endswith("_max")]
    top = [k for k in keys if k.endswith("_max")]
    out: dict[str, float] = {}
    for names, op in ((add, dist.ReduceOp.SUM), (top, dist.ReduceOp.MAX)):
        if names:
            t = torch.tensor([sums.get(k, 0.0) for k in names], dtype=torch.float64, device=dev)
            with _collective("all_reduce"):
                dist.all_reduce(t, op=op)
                out |= dict(zip(names, t.tolist(), strict=True))
    return out


def all_reduce_sum_(world: World, tensors: list[torch.Tensor]) -> int:
    """Sum ``tensors`` across ranks, in place, as one flat bucket of their dtype (the gradient all-reduce: the
    trainer passes its fp64 gradient accumulators); returns the bytes each rank sends into the all-reduce (the
    communication volume bench/distributed.py reports)."""
    n_bytes = sum(t.numel() * t.element_size() for t in tensors)
    if not tensors or not world.distributed:
        return n_bytes
    import torch.distributed as dist

    flat = torch.cat([t.reshape(-1) for t in tensors])
    bucket = flat.to(_comm_device(flat.device))
    with _collective("gradient all_reduce"):
        dist.all_reduce(bucket, op=dist.ReduceOp.SUM)
        bucket = bucket.to(flat.device)
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(bucket[offset : offset + n].view_as(t))
        offset += n
    return n_bytes


def broadcast_parameters(world: World, params: list[torch.Tensor]) -> None:
    """Rank 0's values of ``params`` on every rank (the start of a run: the replicas begin identical)."""
    if not world.distributed:
        return
    import torch.distributed as dist

    for p in params:
        dev = _comm_device(p.device)
        buf = p.detach().to(dev)
        with _collective("broadcast"):
            dist.broadcast(buf, src=0)
        with torch.no_grad():
            p.copy_(buf.to(p.device))


def payload_bytes(obj: Any) -> int:
    """Pickled size of ``obj``: what ``all_gather_objects`` sends per rank (for the bench's volume figures)."""
    return len(pickle.dumps(obj))
