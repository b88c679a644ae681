"""Asynchronous GRPO (max_staleness > 0) on the tiny model: the bound holds, the correction is the hand-computed
one, and a killed sampler, a pause and a killed trainer lose no step and train no prompt batch twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from grpo_core.data.rows import batches
from grpo_core.policy import load_policy
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.merged import MergedEngine
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from grpo_core.update.step import policy_update
from tests.async_driver import CONFIG, prompts_of, sampler_pids
from tests.training import ROWS, DigitShare, Recorder, nontrivial_policy

ROOT = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")
G = CONFIG["group_size"]


def _expected_prompts(steps: int, seed: int) -> list[list[str]]:
    """The prompts of each step as the data cursor deals them: what a run that loses and repeats nothing trains."""
    it = batches(len(ROWS), CONFIG["batch_size"], seed)
    return [[ROWS[i]["prompt"] for i in next(it)] for _ in range(steps)]


def test_k1_trains_within_the_bound_and_says_so(tiny_model_dir: Path, tmp_path: Path) -> None:
    rec = Recorder()
    cfg = GRPOConfig.model_validate({**CONFIG, "checkpoint_interval": 0})
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=5)
    assert result.steps_done == 5
    assert rec.execution is not None and rec.execution.max_staleness == 1
    assert rec.execution.sampler is not None and "own process" in rec.execution.sampler
    assert "asynchronous, samples at most 1 step(s) old" in rec.execution.message()
    lags = [int(k) for m in rec.steps for k in (m.off_policy.staleness if m.off_policy else {"?": 0})]
    assert max(lags) <= 1  # no batch holds a sample older than k versions
    assert 1 in lags  # and the sampler did run ahead of the trainer
    for m in rec.steps:
        assert m.off_policy is not None and m.off_policy.stale_samples_dropped == 0
        assert sum(m.off_policy.staleness.values()) == m.sampling.groups_trained * G
        assert m.off_policy.mismatch_kl >= 0 and m.timing.step.waiting is not None
    assert [prompts_of(m, G) for m in rec.steps] == _expected_prompts(5, seed=5)


def test_the_correction_of_a_stale_rollout_is_the_hand_computed_one(tiny_model_dir: Path) -> None:
    """A rollout sampled by version 0, trained by version 1 (the LoRA moved): the update's importance weights are
    min(π_1/π_0, C) per token, π_1 from a plain forward pass and π_0 what the sampler recorded."""
    model = nontrivial_policy(tiny_model_dir)
    _, tok = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    engine = MergedEngine(model, tok, torch.float32, decode_mode="eager")
    ro = engine.generate(["1+1=", "2+2="], Sampling(4, 6, 1.0, 1.0, seed=3))
    assert ro.sampling_logp is not None
    with torch.no_grad():  # one update later: version 1
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn(p.shape, generator=torch.Generator(device=CPU).manual_seed(2), device=CPU) * 0.05)
    cap = 1.5
    cfg = GRPOConfig(max_staleness=1, tis_cap=cap, group_size=4, batch_size=2, micro_batch_size=8, packing=False)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.5, -0.5], device=CPU)
    sums = policy_update(model, ro, adv, cfg, None, None)

    ids = torch.cat([ro.prompt_ids, ro.completion_ids], dim=1)
    attn = torch.cat([ro.prompt_mask, torch.ones_like(ro.completion_ids)], dim=1)
    pos = (attn.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attn, position_ids=pos).logits.float()
    P = ro.prompt_ids.shape[1]
    logp = torch.log_softmax(logits[:, P - 1 : -1], dim=-1).gather(2, ro.completion_ids.unsqueeze(2)).squeeze(2)
    mask = ro.completion_mask.float()
    ratio = torch.exp(logp - ro.sampling_logp)
    want_weights = (ratio.clamp(max=cap) * mask).sum()
    want_kl = ((ratio - 1 - (logp - ro.sampling_logp)) * mask).sum()
    assert sums.is_weight_sum == pytest.approx(float(want_weights), rel=1e-4)
    assert sums.mismatch_kl_sum == pytest.approx(float(want_kl), rel=1e-3, abs=1e-6)
    assert sums.is_bounded_tokens == float(((ratio > cap) * mask).sum())
    assert float(want_kl) > 1e-4  # the stale weights differ: the test measures a real gap


def test_a_killed_sampler_is_restarted_and_nothing_is_lost(tiny_model_dir: Path, tmp_path: Path) -> None:
    class KillSampler(Recorder):
        def on_step(self, metrics):  # type: ignore[no-untyped-def]
            super().on_step(metrics)
            if metrics.step == 2:
                for pid in sampler_pids():
                    os.kill(pid, signal.SIGKILL)

    rec = KillSampler()
    cfg = GRPOConfig.model_validate({**CONFIG, "checkpoint_interval": 0})
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=5)
    assert result.steps_done == 5
    assert [prompts_of(m, G) for m in rec.steps] == _expected_prompts(5, seed=5)
    assert any(level == "warn" and "sampler process exited" in msg for level, msg in rec.messages)
    assert max(int(k) for m in rec.steps if m.off_policy for k in m.off_policy.staleness) <= 1


def test_pause_and_resume_lose_and_repeat_nothing(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = GRPOConfig.model_validate(CONFIG)
    first = Recorder(stop_after=2)
    out = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=first, work_dir=tmp_path / "a", seed=5)
    assert out.stopped and out.steps_done == 2 and first.ckpts[-1][0] == 2
    second = Recorder()
    train(
        cfg,
        tiny_model_dir,
        ROWS,
        [DigitShare()],
        callbacks=second,
        work_dir=tmp_path / "b",
        seed=5,
        resume_from=first.ckpts[-1][1],
    )
    assert [m.step for m in second.steps] == [3, 4, 5]
    trained = [prompts_of(m, G) for m in first.steps + second.steps]
    assert trained == _expected_prompts(5, seed=5)


def _journal(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_killed_trainer_takes_its_sampler_down_and_resumes_exactly(tiny_model_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    first = tmp_path / "first.jsonl"
    cmd = [sys.executable, "-m", "tests.async_driver", "--model", str(tiny_model_dir), "--work", str(tmp_path / "w")]
    proc = subprocess.Popen([*cmd, "--out", str(first), "--hold-at", "2"], cwd=ROOT, env=env)  # killed there
    deadline = time.monotonic() + 300
    while not any(r.get("checkpoint") == 2 for r in _journal(first)):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never checkpointed step 2"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    pids = [p for r in _journal(first) for p in r.get("sampler_pids", [])]
    assert pids
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in pids):
        assert time.monotonic() < deadline, "the sampler process outlived its trainer"
        time.sleep(0.2)
    done = [r for r in _journal(first) if "step" in r]
    ckpt = max((r for r in _journal(first) if "checkpoint" in r), key=lambda r: r["checkpoint"])
    second = tmp_path / "second.jsonl"
    subprocess.run([*cmd, "--out", str(second), "--resume-from", ckpt["path"]], cwd=ROOT, env=env, check=True)
    resumed = [r for r in _journal(second) if "step" in r]
    assert resumed[0]["step"] == ckpt["checkpoint"] + 1 and resumed[-1]["step"] == 5
    kept = [r["prompts"] for r in done if r["step"] <= ckpt["checkpoint"]]
    assert kept + [r["prompts"] for r in resumed] == _expected_prompts(5, seed=5)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "zombie"


def test_settings_that_cannot_sample_beside_the_trainer_are_refused() -> None:
    from pydantic import ValidationError

    refused = [
        ({"rollout_engine": "transformers"}, "samples with the trainer's own model"),
        ({"rollout_engine": "vllm", "vllm_weight_sync": "merged"}, "never the merged weights"),
        ({"vllm_sleep_mode": True}, "samples during the update"),
        ({"sharding": "fsdp"}, "not supported with sharding 'fsdp'"),
    ]
    for fields, reason in refused:
        with pytest.raises(ValidationError, match=reason):
            GRPOConfig(max_staleness=1, **fields)
        GRPOConfig(max_staleness=0, **fields)  # each is fine in the synchronous loop
    GRPOConfig(max_staleness=1, rollout_engine="vllm")  # LoRA hot swap (auto resolves to it at k > 0)
