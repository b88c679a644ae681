"""Where the sampler runs at max_staleness > 0 (grpo_core.hardware.rollout_placement): shared with the trainer or on a
device of its own (resources.rollout_devices), on a GPU worker and on a CPU worker; and a CPU job that gives the
sampler a device of its own trains, saying where each side runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import grpo_core.hardware.rollout_placement as rp
from grpo_core.errors import UserError
from grpo_core.hardware.device import Placement
from grpo_core.hardware.rollout_placement import DeviceSplit, rollout_placement, split_cores
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.async_driver import CONFIG
from tests.training import ROWS, DigitShare, Recorder


def _placement(device: str, threads: int) -> Placement:
    return Placement(torch.device(device), "fp32", "test", threads, "requested")


def test_shared_the_sampler_takes_the_last_half_of_the_trainers_cores() -> None:
    assert split_cores(8, list(range(8))) == (4, (4, 5, 6, 7))
    assert split_cores(3, [0, 1, 2]) == (2, (2,))
    assert split_cores(1, [5]) == (1, (5,))  # one CPU: both on it


def test_a_rollout_device_on_a_cpu_worker_is_its_share_of_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rp.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    seat = rollout_placement(_placement("cpu", 8), DeviceSplit(devices=4, rollout_devices=1))
    assert (seat.device.type, seat.cores, seat.trainer_threads, seat.threads, seat.own_device) == (
        "cpu",
        (6, 7),
        6,
        2,
        True,
    )
    shared = rollout_placement(_placement("cpu", 8), None)
    assert (shared.cores, shared.trainer_threads, shared.own_device) == ((4, 5, 6, 7), 4, False)


def test_a_rollout_device_on_a_gpu_worker_is_the_next_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rp.torch.cuda, "device_count", lambda: 2)
    seat = rollout_placement(_placement("cuda:0", 0), DeviceSplit(devices=2, rollout_devices=1))
    assert (str(seat.device), seat.cores, seat.threads, seat.own_device) == ("cuda:1", None, 1, True)
    shared = rollout_placement(_placement("cuda:0", 0), None)
    assert (str(shared.device), shared.own_device) == ("cuda:0", False)
    monkeypatch.setattr(rp.torch.cuda, "device_count", lambda: 1)
    with pytest.raises(
        UserError, match=r"resources.rollout_devices=1 puts the sampler on cuda:1, and this worker sees 1 GPU"
    ):
        rollout_placement(_placement("cuda:0", 0), DeviceSplit(devices=2, rollout_devices=1))


def test_a_split_that_leaves_nothing_to_train_or_to_sample_is_refused() -> None:
    for rollout in (0, 2):
        with pytest.raises(UserError, match=r"resources\.rollout_devices"):
            DeviceSplit(devices=2, rollout_devices=rollout)


def test_a_sampler_on_a_cpu_device_of_its_own_trains_and_says_where(tiny_model_dir: Path, tmp_path: Path) -> None:
    rec = Recorder()
    cfg = GRPOConfig.model_validate({**CONFIG, "max_steps": 3, "checkpoint_interval": 0})
    split = DeviceSplit(devices=2, rollout_devices=1)
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=5, split=split)
    assert result.steps_done == 3
    ex = rec.execution
    assert ex is not None and ex.sampler is not None and ex.sampler.startswith("its own process"), ex
    assert ex.sampler.endswith(", a device of its own"), ex.sampler
    assert max(int(k) for m in rec.steps if m.off_policy for k in m.off_policy.staleness) <= 1
    synchronous = cfg.model_copy(update={"max_staleness": 0})
    with pytest.raises(UserError, match="needs max_staleness of at least 1"):
        train(synchronous, tiny_model_dir, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=tmp_path, split=split)
