"""Where the sampler runs beside the trainer at ``max_staleness`` > 0: sharing the trainer's device, or on a device
of its own (``resources.rollout_devices``: disaggregated sampling).

A job holds ``devices`` devices of one node. Disaggregated, one training process trains on the first of them and
the sampler takes the next: on a GPU worker the next CUDA device; on a CPU worker, where a device is a share of the
node's cores (as each rank of a multi-process CPU job gets ``cores / devices``), the sampler takes
``rollout_devices / devices`` of the trainer's cores, at least one, and the trainer keeps the rest. Shared, the
sampler takes the last half of the trainer's cores on a CPU, and runs as a second CUDA context on the trainer's GPU.
Either way the trainer never waits for the sampler's cores: they are no longer its torch threads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from grpo_core.errors import UserError
from grpo_core.hardware.device import Placement

SHARED_CORES = 0.5  # the sampler's share of the trainer's cores when it shares the trainer's device


@dataclass(frozen=True)
class DeviceSplit:
    """A node's ``devices`` split between one training process and the sampler's ``rollout_devices``."""

    devices: int
    rollout_devices: int

    def __post_init__(self) -> None:
        if not 0 < self.rollout_devices < self.devices:
            raise UserError(
                f"resources.rollout_devices={self.rollout_devices} must be at least 1 and leave a device to train "
                f"(resources.devices={self.devices})"
            )


@dataclass(frozen=True)
class RolloutPlacement:
    """The sampler's device, its CPU cores (None: wherever the OS puts it, a GPU job), the torch threads the trainer
    keeps, and whether the device is the sampler's alone."""

    device: torch.device
    cores: tuple[int, ...] | None
    trainer_threads: int
    own_device: bool

    @property
    def threads(self) -> int:
        """torch's CPU threads in the sampler: one per core it holds, one on a GPU."""
        return len(self.cores) if self.cores is not None else 1


def split_cores(threads: int, cpus: list[int], share: float = SHARED_CORES) -> tuple[int, tuple[int, ...]]:
    """(trainer threads, sampler cores) out of the trainer's ``threads`` on ``cpus``: the sampler takes the last
    ``share`` of them (at least one), the trainer the rest (sharing the one CPU when there is a single one)."""
    threads = max(1, min(threads, len(cpus)))
    n = max(1, int(threads * share))
    return max(1, threads - n), tuple(cpus[-n:])


def rollout_placement(placement: Placement, split: DeviceSplit | None) -> RolloutPlacement:
    """Where the sampler of a job trained at ``placement`` runs (the module doc); a GPU the worker lacks is the
    user's error, named with the field that asked for it."""
    if placement.is_cuda:
        if split is None:
            return RolloutPlacement(placement.device, None, placement.threads, own_device=False)
        index = (placement.device.index or 0) + split.devices - split.rollout_devices
        count = torch.cuda.device_count()
        if index >= count:
            raise UserError(
                f"resources.rollout_devices={split.rollout_devices} puts the sampler on cuda:{index}, and this worker "
                f"sees {count} GPU{'s' * (count != 1)}: run it where resources.devices={split.devices} GPUs are free, "
                "or set rollout_devices 0 to sample on the training GPU"
            )
        return RolloutPlacement(torch.device("cuda", index), None, placement.threads, own_device=True)
    share = SHARED_CORES if split is None else split.rollout_devices / split.devices
    if not hasattr(os, "sched_getaffinity"):  # no way to pin: the sampler shares the trainer's cores
        return RolloutPlacement(placement.device, None, placement.threads, own_device=split is not None)
    threads, cores = split_cores(placement.threads, sorted(os.sched_getaffinity(0)), share)
    return RolloutPlacement(placement.device, cores, threads, own_device=split is not None)
