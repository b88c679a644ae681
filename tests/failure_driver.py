"""Two ranks under torchrun that stand for two nodes (each its own failure folder): rank 1 fails with an error of
its own, rank 0 meets it as a lost peer in its next collective. ``python -m torch.distributed.run
--nproc-per-node 2 -m tests.failure_driver SPEC0 SPEC1`` (tests/distributed/test_rank_failures.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from grpo_core.errors import DeviceOutOfMemory, PeerLost
from grpo_core.hardware import distributed
from grpo_core.hardware.distributed import World
from worker.launch import RankSpec
from worker.rank import record_failure
from worker.settings import WorkerSettings


def main(specs: list[str]) -> int:
    world = World.from_env()
    spec = RankSpec.model_validate_json(Path(specs[world.rank]).read_text())
    settings = WorkerSettings(state_dir=spec.folder, worker_token="t")
    cpu = torch.device("cpu")
    with distributed.process_group(world, cpu):
        distributed.any_rank(world, False, cpu)  # both ranks are up
        if world.rank == 1:
            oom = DeviceOutOfMemory("out of memory on cuda:1 in the update of step 2 (peak 79.0 GiB of 79.1 GiB)")
            record_failure(oom, spec, world, settings)
            return 1
        try:
            distributed.any_rank(world, False, cpu)  # rank 1 is gone: the collective fails
        except PeerLost as exc:
            record_failure(exc, spec, world, settings)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
