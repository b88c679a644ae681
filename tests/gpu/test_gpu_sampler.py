"""The merged sampler's CUDA graphs on a GPU: a replayed step is the eager step on the same buffers, a graph is
captured once per batch-size bucket and replayed across rollouts and syncs, and the recorded log-probs are the
trainer's. tests/unit/test_static_decode.py checks the same buffers and masks on a CPU with the graphs off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.policy import load_policy, prompts_of
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.merged import MergedEngine
from grpo_core.schemas.config import GRPOConfig
from tests.gpu.helpers import trainer_logprobs

ROWS = [{"prompt": f"What is {a} + {b}?"} for a, b in ((2, 3), (14, 27), (6, 9))]


def _policy(model_dir: Path, precision: str) -> tuple[Any, Any]:
    model, tok = load_policy(model_dir, GRPOConfig(device="cuda", precision=precision), seed=0)
    with torch.no_grad():  # an adapter that changes the outputs, as after some training
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.002, generator=torch.Generator(device=p.device).manual_seed(0))
    return model, tok


def test_replayed_graphs_sample_what_the_eager_static_steps_sample(smollm2_dir: Path) -> None:
    """fp32: a graph replays the very kernels the eager step runs, so tokens and log-probs are the same; the
    graph is captured on the first rollout of a bucket only, and after a sync it samples the new weights."""
    model, tok = _policy(smollm2_dir, "fp32")
    prompts = prompts_of(ROWS, tok)
    graphs = MergedEngine(model, tok, torch.float32, decode_mode="graphs")
    eager = MergedEngine(model, tok, torch.float32, decode_mode="static")
    assert graphs.static is not None and graphs.static.graphs
    kw = Sampling(group_size=4, max_new_tokens=48, temperature=0.7, top_p=1.0, seed=3)
    for round_ in range(2):
        a, b = graphs.generate(prompts, kw), eager.generate(prompts, kw)
        assert graphs.static.failure is None, graphs.static.failure
        assert torch.equal(a.completion_ids, b.completion_ids), round_
        assert a.sampling_logp is not None and b.sampling_logp is not None
        torch.testing.assert_close(a.sampling_logp, b.sampling_logp, atol=1e-5, rtol=0)
        m = a.completion_mask.bool()
        want = trainer_logprobs(model, a, 0.7, "fp32")
        assert float((a.sampling_logp[m] - want[m]).abs().max()) < 1e-3
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_A" in name:
                    p.add_(0.01)
        graphs.sync(model, round_ + 1)
        eager.sync(model, round_ + 1)
    assert graphs.static.captures == 1 and graphs.static.allocations == 1  # 12 rows: one bucket, one capture
    graphs.generate(prompts[:1], kw)  # 4 rows: a second bucket on the same buffers
    assert graphs.static.captures == 2 and graphs.static.allocations == 1


def test_bf16_graphs_stay_within_the_eager_samplers_distance_to_the_trainer(smollm2_dir: Path) -> None:
    """bf16 (what a GPU job runs): the graphs' log-probs are as close to the trainer's as the eager loop's."""
    model, tok = _policy(smollm2_dir, "bf16")
    prompts = prompts_of(ROWS, tok)
    kw = Sampling(group_size=8, max_new_tokens=64, temperature=0.7, top_p=1.0, seed=1)
    distance = {}
    for mode in ("graphs", "eager"):
        engine = MergedEngine(model, tok, torch.bfloat16, decode_mode=mode)
        ro = engine.generate(prompts, kw)
        m = ro.completion_mask.bool()
        assert ro.sampling_logp is not None and bool(torch.isfinite(ro.sampling_logp).all())
        distance[mode] = float((ro.sampling_logp[m] - trainer_logprobs(model, ro, 0.7, "bf16")[m]).abs().mean())
    assert distance["graphs"] < 1.5 * distance["eager"] + 0.01, distance


def test_a_gpu_job_samples_through_graphs(smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rollout_engine: merged`` on a GPU captures its graphs by default and trains with them."""
    import grpo_core.rollout.engines.merged as merged
    from grpo_core.trainer import train
    from tests.training import ROWS as TRAIN_ROWS
    from tests.training import DigitShare, Recorder

    decoders: list[Any] = []
    real = merged.MergedEngine.__init__

    def spy(self: Any, *a: Any, **k: Any) -> None:
        real(self, *a, **k)
        decoders.append(self.static)  # the engine drops it when it closes

    monkeypatch.setattr(merged.MergedEngine, "__init__", spy)
    cfg = GRPOConfig.model_validate(
        {"group_size": 4, "batch_size": 2, "max_steps": 2, "max_completion_tokens": 16, "rollout_engine": "merged"}
    )
    rec = Recorder()
    train(cfg, smollm2_dir, TRAIN_ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=0)
    assert len(rec.steps) == 2 and decoders and decoders[0] is not None
    assert decoders[0].failure is None and decoders[0].captures >= 1
    assert decoders[0].allocations == 1  # reserved at the start for the step's rows, never grown
