"""GRPO steps with vLLM as the rollout engine: the loop syncs the engine every step and applies TIS."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
pytest.importorskip("vllm", reason="vLLM is not installed (optional extra: pip install '.[vllm]')")

from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.tiny_model import build_tiny_model
from tests.training import ROWS, DigitShare, Recorder

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


SETTINGS = {
    "group_size": 4,
    "batch_size": 2,
    "max_completion_tokens": 12,
    "max_prompt_tokens": 64,
    "learning_rate": 0.01,
    "beta": 0.0,
    "temperature": 0.7,
    "rollout_engine": "vllm",
    "precision": "fp32",  # the log-prob match below is fp32's (auto would pick bf16 on an AMX CPU)
}


def _model(tmp_path: Path) -> Path:
    return build_tiny_model(tmp_path, "tiny-hd64", hidden_size=128, num_attention_heads=2, peaked_eos=True)


def test_three_steps_with_the_vllm_engine(tmp_path: Path) -> None:
    model = _model(tmp_path)
    cfg = GRPOConfig.model_validate(SETTINGS | {"max_steps": 3})
    rec = Recorder()
    result = train(cfg, model, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path / "w", seed=1)
    assert result.steps_done == 3 and [m.step for m in rec.steps] == [1, 2, 3]
    for m in rec.steps:
        # the engine's log-probs match the trainer's (fp32): the TIS weights are ~1 and never capped here
        assert m.sampling_logp_difference_max is not None and m.sampling_logp_difference_max < 1e-3
        assert m.importance_sampling_ratio_mean is not None
        assert math.isclose(m.importance_sampling_ratio_mean, 1.0, abs_tol=1e-3)
        assert m.grad_norm > 0


def test_asynchronous_steps_hot_swap_each_adapter_into_vllm(tmp_path: Path) -> None:
    """max_staleness 1 with vLLM: its engine process samples the next batch while the trainer updates, each step's
    adapter reaches it as a LoRA hot swap (a snapshot: the trainer never waits for the rollout in flight), and the
    correction sees samples one version old."""
    model = _model(tmp_path)
    cfg = GRPOConfig.model_validate(SETTINGS | {"max_steps": 4, "vllm_weight_sync": "lora", "max_staleness": 1})
    rec = Recorder()
    result = train(cfg, model, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path / "w", seed=1)
    assert result.steps_done == 4 and [m.step for m in rec.steps] == [1, 2, 3, 4]
    assert rec.execution is not None and rec.execution.max_staleness == 1
    assert rec.execution.sampler is not None and "hot-swapped" in rec.execution.sampler
    lags = [int(k) for m in rec.steps if m.off_policy is not None for k in m.off_policy.staleness]
    assert len({m.step for m in rec.steps if m.off_policy is not None}) == 4
    assert max(lags) <= 1 and 1 in lags
    # a lag of one version is a real gap: the trainer's log-probs moved away from the sampler's
    assert max(m.off_policy.mismatch_kl for m in rec.steps if m.off_policy is not None) > 1e-6
