"""The vLLM rollout engine on CUDA (a CUDA build of vLLM; the supported releases are grpo_core.hardware.vllm_support's):
the trainer's log-probs, a new policy after every sync (LoRA hot swap in bf16, merged weights in fp32), and sleep
mode handing the engine's memory to the update. tests/vllm runs the same engine on vLLM's CPU build."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.hardware.device import vllm_on_cuda
from grpo_core.policy import load_policy, prompts_of
from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.schemas.config import GRPOConfig
from tests.gpu.helpers import trainer_logprobs

pytestmark = pytest.mark.skipif(not vllm_on_cuda(), reason="no CUDA build of vLLM here (docs/guides/gpu.md)")

T = 0.7
ROWS = [{"prompt": "What is 2 + 3?"}, {"prompt": "Name three fruits."}, {"prompt": "Count from 1 to 10."}]
SHARE = 0.2  # of the GPU: room for the trainer's side of each test beside the engine
# |vLLM − trainer| log-prob per token. fp32: the mean within float rounding (the engine runs Triton's fp32 dots in
# full precision; TF32 would put it near 1e-3), the max a little above; bf16: the mean within the two stacks' bf16
# kernels. All far below what one sync of the adapters below moves, which the tests check as well.
FP32_MEAN, FP32_MAX = 5e-4, 2e-2
BF16_MEAN = 0.05


@pytest.fixture(scope="module", params=[("lora", "bf16"), ("merged", "fp32")], ids=["lora-bf16", "merged-fp32"])
def setup(request: pytest.FixtureRequest, smollm2_dir: Path) -> Iterator[tuple[Any, Any, Any, str]]:
    """(engine, policy, tokenizer, precision): one engine per sync path, with sleep mode on."""
    from grpo_core.rollout.engines.vllm_engine import VLLMEngine

    sync, precision = request.param
    model, tok = load_policy(smollm2_dir, GRPOConfig(device="cuda", precision=precision), seed=0)
    engine = VLLMEngine(
        smollm2_dir,
        tok,
        dtype="bfloat16" if precision == "bf16" else "float32",
        max_model_len=1024,
        max_lora_rank=16,
        seed=0,
        sync=sync,
        gpu_memory_utilization=SHARE,
        device="cuda:0",
        sleep=True,
    )
    yield engine, model, tok, precision  # not synced yet: the first test checks what a fresh engine samples
    engine.close()


def _generate(engine: Any, tok: Any, seed: int) -> Rollout:
    kw = Sampling(group_size=4, max_new_tokens=48, temperature=T, top_p=1.0, seed=seed)
    return engine.generate(prompts_of(ROWS, tok), kw)


def _within(ro: Rollout, want: torch.Tensor, precision: str) -> tuple[bool, float]:
    """(whether the sampler's log-probs are within the precision's bounds of ``want``, their mean distance)."""
    assert ro.sampling_logp is not None
    diff = (ro.sampling_logp - want)[ro.completion_mask.bool()].abs()
    mean = float(diff.mean())
    if precision == "fp32":
        return mean < FP32_MEAN and float(diff.max()) < FP32_MAX, mean
    return mean < BF16_MEAN, mean


def _set_lora_b(model: Any, seed: int, scale: float = 0.03) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)


def test_a_fresh_engine_put_to_sleep_before_its_first_sync_wakes_with_the_base_weights(
    setup: tuple[Any, Any, Any, str],
) -> None:
    """The trainer suspends the engine before it sizes its micro-batches, before any sync: the base weights (the
    policy's, its adapter still zero) must come back on the first rollout."""
    engine, model, tok, precision = setup
    engine.suspend()
    ro = _generate(engine, tok, seed=1)
    ok, mean = _within(ro, trainer_logprobs(model, ro, T, precision), precision)
    assert ok, mean


def test_each_sync_samples_the_new_policy_with_the_trainers_log_probs(setup: tuple[Any, Any, Any, str]) -> None:
    engine, model, tok, precision = setup
    for step in (1, 2):
        _set_lora_b(model, seed=step)
        engine.sync(model, step)
        ro = _generate(engine, tok, seed=10 + step)
        ok, near = _within(ro, trainer_logprobs(model, ro, T, precision), precision)
        with model.disable_adapter():
            _, far = _within(ro, trainer_logprobs(model, ro, T, precision), precision)
        print(f"\n{engine._sync_mode} {precision} step {step}: |vLLM - policy| {near:.2e}, |vLLM - base| {far:.2e}")
        assert ok and far > 4 * near
        if engine._sync_mode == "lora":  # the previous step's adapter was removed
            assert set(engine._llm.llm_engine.list_loras()) == {step + 1}


def test_sleep_hands_the_engines_memory_to_the_update_and_wakes_for_the_next_step(
    setup: tuple[Any, Any, Any, str],
) -> None:
    """``suspend`` (before each update) frees the KV cache and the weights' device memory; the next sync wakes
    the engine, which samples the synced policy as before."""
    engine, model, tok, precision = setup
    torch.cuda.synchronize()
    free_awake = torch.cuda.mem_get_info()[0]
    engine.suspend()
    torch.cuda.synchronize()
    freed_gb = (torch.cuda.mem_get_info()[0] - free_awake) / 2**30
    total_gb = torch.cuda.get_device_properties(0).total_memory / 2**30
    print(f"\n{engine._sync_mode}: sleeping freed {freed_gb:.1f} GiB of the engine's {SHARE * total_gb:.1f} GiB share")
    assert freed_gb > 0.5 * SHARE * total_gb
    engine.suspend()  # a second suspend is a no-op
    _set_lora_b(model, seed=3)
    engine.sync(model, 3)  # wakes it: merged sync reloads every weight into the woken memory
    assert not engine._asleep
    ro = _generate(engine, tok, seed=5)
    ok, mean = _within(ro, trainer_logprobs(model, ro, T, precision), precision)
    assert ok, mean
