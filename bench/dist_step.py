"""One world of bench/distributed.py: ``python -m bench.dist_step ARGS`` (world size 1, a plain process) or
``torchrun --nproc-per-node 2 -m bench.dist_step ARGS`` (world size 2, gloo).

It runs grpo_core.trainer.train unmodified: the probes wrap module-level names the loop looks up at call time (as
bench/sides.py wraps policy_update), and record per step on every rank:

- ``pipeline.collect_batch``: sampling + scoring (+ the (rollout, scores) all-gather + the post-gather batch
  assembly: filters, shaping, advantages); its ``stats`` split off sampling and scoring.
- ``trainer.policy_update``: this rank's micro-batches, the gradient all-reduce and the metric sums.
- ``update.all_reduce_sum_``: its return value, the fp64 gradient bytes each rank sends, and its seconds.
- ``sampling.all_gather_objects``: the share a rank sends (kept, and pickled only after the run, so pickling is
  not added to the step) and its seconds, which include waiting for the slower rank.
- every ``torch.distributed`` collective the trainer calls: how many per step.

Rank 0 also times each step from ``should_stop`` to ``on_step`` (the next step's gate: checkpoints are not in it).
After training, still in the process group, the collectives run again in isolation at the same sizes, each after
a barrier so no waiting on a peer is timed: an fp64 all_reduce of the gradient's size, an all_gather_object of
this rank's last share, and that share's pickle round trip alone. Rank r writes ``OUT/rank-r.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import pickle
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

import grpo_core.rollout.pipeline as pipeline
import grpo_core.rollout.sampling as sampling
import grpo_core.trainer as tr
import grpo_core.update.step as upd
from bench.shared import LastNumber
from grpo_core.hardware import distributed
from grpo_core.hardware.distributed import World, payload_bytes
from grpo_core.schemas.config import GRPOConfig

COLLECTIVES = ("all_reduce", "all_gather_object", "broadcast", "broadcast_object_list", "all_gather", "barrier")


class Probe:
    """Per-step records of one rank; ``step`` advances when the trainer starts collecting a batch."""

    def __init__(self) -> None:
        self.step = 0
        self.rows: dict[int, dict[str, Any]] = {}
        self.shares: dict[int, list[Any]] = {}  # step -> the (rollout, scores) shares this rank sent
        self.on = True

    def row(self) -> dict[str, Any]:
        return self.rows.setdefault(self.step, {"collectives": {}, "collective_s": 0.0})

    def install(self) -> None:
        """Wrap the names the loop looks up at call time (the modules' attributes; nothing in them changes)."""
        targets: list[tuple[Any, str, Any]] = [
            (pipeline, "collect_batch", self._collect),
            (tr, "policy_update", self._update),
            (upd, "all_reduce_sum_", self._all_reduce),
            (sampling, "all_gather_objects", self._gather),
        ]
        for module, name, wrap in targets + [(dist, name, self._counted) for name in COLLECTIVES]:
            setattr(module, name, wrap(getattr(module, name)))

    def _collect(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kw: Any) -> Any:
            self.step += 1
            t = time.perf_counter()
            batch = fn(*args, **kw)
            total = time.perf_counter() - t
            sampling_s, scoring_s = batch.sampling_seconds, batch.scoring_seconds
            self.row().update(collect_s=total, sampling_s=sampling_s, scoring_s=scoring_s, rows=len(batch.ro.texts))
            self.row()["post_gather_s"] = total - sampling_s - scoring_s
            return batch

        return wrapped

    def _update(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            out = fn(*args, **kw)
            self.row()["policy_update_s"] = self.row().get("policy_update_s", 0.0) + time.perf_counter() - t
            return out

        return wrapped

    def _all_reduce(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(world: World, tensors: list[torch.Tensor]) -> int:
            t = time.perf_counter()
            n_bytes: int = fn(world, tensors)
            self.row().update(grad_allreduce_s=time.perf_counter() - t, grad_bytes=n_bytes)
            return n_bytes

        return wrapped

    def _gather(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(world: World, obj: Any) -> Any:
            t = time.perf_counter()
            out = fn(world, obj)
            self.row()["gather_s"] = self.row().get("gather_s", 0.0) + time.perf_counter() - t
            self.shares.setdefault(self.step, []).append(obj)
            return out

        return wrapped

    def _counted(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            out = fn(*args, **kw)
            if self.on:
                r = self.row()
                r["collectives"][fn.__name__] = r["collectives"].get(fn.__name__, 0) + 1
                r["collective_s"] += time.perf_counter() - t
            return out

        return wrapped


class Gate:
    """grpo_core.run.Callbacks on rank 0: ``steps`` steps, each timed from its gate to its metrics."""

    def __init__(self, steps: int) -> None:
        self.steps, self.t0 = steps, 0.0
        self.done: list[dict[str, Any]] = []
        self.execution: dict[str, Any] = {}

    def on_message(self, message: str, level: str = "info") -> None:
        pass

    def on_start(self, execution: Any) -> None:
        self.execution = execution.model_dump()

    def on_step(self, m: Any) -> None:
        wall = time.perf_counter() - self.t0
        s = m.timing.step
        phases = {"sampling": s.sampling, "scoring": s.scoring, "training": s.training, "full": s.full_iteration}
        self.done.append({"wall": wall, "phases": phases, "completion_tokens": m.tokens})

    def on_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        pass

    def should_stop(self) -> bool:
        self.t0 = time.perf_counter()
        return len(self.done) >= self.steps


def isolated(world: World, grad_numel: int, share: Any, reps: int) -> dict[str, float]:
    """Median seconds of the step's collectives alone (after a barrier each: no waiting on a peer), of a
    one-element all_reduce (the latency of the step's small collectives), and of the share's pickle round trip."""
    pickle_s = []
    for _ in range(reps):
        t = time.perf_counter()
        pickle.loads(pickle.dumps(share))
        pickle_s.append(time.perf_counter() - t)
    out = {"pickle_roundtrip_s": statistics.median(pickle_s)}
    if not world.distributed:
        return out
    bucket, one = torch.zeros(grad_numel, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    ar, ag, lat = [], [], []
    for _ in range(reps):
        dist.barrier()
        t = time.perf_counter()
        dist.all_reduce(one)
        lat.append(time.perf_counter() - t)
        dist.barrier()
        t = time.perf_counter()
        dist.all_reduce(bucket)
        ar.append(time.perf_counter() - t)
        dist.barrier()
        t = time.perf_counter()
        dist.all_gather_object([None] * world.size, share)
        ag.append(time.perf_counter() - t)
    med = statistics.median
    return out | {"grad_allreduce_s": med(ar), "gather_s": med(ag), "small_allreduce_s": med(lat)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, required=True, help="steps in all, the warm-up included")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=10, help="repetitions of the isolated collectives")
    a = ap.parse_args()
    world = World.from_env()
    cfg = GRPOConfig(
        device="cpu",
        batch_size=a.batch_size,
        group_size=a.group_size,
        max_completion_tokens=a.max_tokens,
        beta=0.04,
        epsilon=0.2,
        learning_rate=1e-5,
        loss_aggregation="seq_mean_token_mean",
        temperature=1.0,
        precision=a.precision,
        max_steps=10_000,  # the gate stops the run
        gradient_checkpointing=False,
        rollout_engine="merged",
    )
    from scripts.demo import make_rows

    rows = make_rows(random.Random(a.seed), 64)
    probe, gate = Probe(), Gate(a.steps)
    probe.install()
    with distributed.process_group(world, torch.device("cpu")), tempfile.TemporaryDirectory() as work:
        tr.train(cfg, a.model, rows, [LastNumber()], callbacks=gate, work_dir=Path(work), seed=a.seed, world=world)
        probe.on = False
        grad_bytes = max(r.get("grad_bytes", 0) for r in probe.rows.values())
        last = probe.shares[max(probe.shares)][0] if probe.shares else None
        iso = isolated(world, grad_bytes // 8, last, a.reps) if last is not None else {}
    for step, shares in probe.shares.items():
        probe.rows[step]["gather_bytes"] = sum(payload_bytes(s) for s in shares)
    result = {
        "rank": world.rank,
        "world_size": world.size,
        "threads": torch.get_num_threads(),
        "probe": probe.rows,
        "isolated": iso,
        "steps": gate.done,
        "execution": gate.execution,
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"rank-{world.rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
