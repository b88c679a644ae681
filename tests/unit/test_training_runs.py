"""Whole training runs on the tiny model: every recipe, exact resume across processes, best checkpoint,
shared prefill, sampling strategies end to end."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grpo_core.checkpoint import MANIFEST, CheckpointError, load_checkpoint, read_manifest
from grpo_core.policy import load_policy
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.hf import sample
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.presets import PRESETS
from grpo_core.trainer import train
from tests.training import ROWS, DigitShare, Recorder, StartsWithDigit

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"group_size": 4, "batch_size": 2, "max_steps": 2, "max_completion_tokens": 5, "learning_rate": 0.01}


@pytest.mark.parametrize("recipe", sorted(PRESETS))
def test_every_recipe_trains_two_steps(tiny_model_dir: Path, tmp_path: Path, recipe: str) -> None:
    overrides = dict(SMALL)
    if PRESETS[recipe].get("gfpo_sample_size"):
        overrides["gfpo_sample_size"] = 6
    cfg = GRPOConfig.model_validate({"recipe": recipe, **overrides, "micro_batch_size": 3})
    for k, v in PRESETS[recipe].items():  # the recipe filled everything the test did not set
        assert k in overrides or getattr(cfg, k) == v
    rec = Recorder()
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=1)
    assert result.steps_done == 2 and all(math.isfinite(m.loss) for m in rec.steps)
    if not cfg.mask_truncated_completions:  # the random model rarely ends within 5 tokens: DAPO masks those
        assert all(m.grad_norm > 0 for m in rec.steps)


def _drive(tmp_path: Path, model: Path, name: str, *extra: str) -> dict:
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, "-m", "tests.resume_driver", "--model", str(model), "--work", str(tmp_path / name)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run([*cmd, "--out", str(out), *extra], cwd=ROOT, env=env, check=True, timeout=600)
    return json.loads(out.read_text())


def test_resume_in_a_fresh_process_is_exact(tiny_model_dir: Path, tmp_path: Path) -> None:
    """6 steps straight == 3 steps, exit, load the checkpoint in a new interpreter, 3 more: same weights, same
    metrics (the wall-clock ones aside), with μ = 2, β > 0, a warmup+cosine schedule and dynamic sampling."""
    from safetensors.torch import load_file

    straight = _drive(tmp_path, tiny_model_dir, "straight")
    first = _drive(tmp_path, tiny_model_dir, "first", "--stop-after", "3")
    assert first["steps_done"] == 3 and [c["step"] for c in first["checkpoints"]] == [3]
    ckpt = Path(first["checkpoints"][0]["path"])
    manifest = read_manifest(ckpt)
    assert manifest["step"] == 3 and manifest["cursor"] >= 3
    second = _drive(tmp_path, tiny_model_dir, "second", "--resume-from", str(ckpt))

    assert [m["step"] for m in second["steps"]] == [4, 5, 6]
    # each process resolved precision auto on its own: a run in another precision cannot match (and says so here)
    wheres = [r["execution"] for r in (straight, first, second)]
    assert all(w["precision"] == wheres[0]["precision"] for w in wheres), wheres
    assert first["steps"] + second["steps"] == straight["steps"]  # every metric, exactly (floats included)
    rounds = sum(m["sampling"]["sampling_rounds"] for m in straight["steps"])
    assert rounds > 6, "dynamic sampling never skipped a batch: the cursor was not exercised"
    a = load_file(str(Path(straight["checkpoints"][-1]["path"]) / "adapter_model.safetensors"))
    b = load_file(str(Path(second["checkpoints"][-1]["path"]) / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(float(a[k].abs().sum()) > 0 for k in a if "lora_B" in k)


def test_a_checkpoint_without_manifest_or_with_a_changed_file_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = GRPOConfig.model_validate({**SMALL, "max_steps": 1})
    rec = Recorder()
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=1)
    ckpt = result.final_checkpoint
    assert ckpt is not None and (ckpt / MANIFEST).is_file()
    model, _ = load_policy(tiny_model_dir, cfg, seed=1)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    assert load_checkpoint(model, opt, ckpt).step == 1
    with (ckpt / "adapter_model.safetensors").open("ab") as fh:
        fh.write(b"x")
    with pytest.raises(CheckpointError, match="corrupted"):
        load_checkpoint(model, opt, ckpt)
    (ckpt / MANIFEST).unlink()
    with pytest.raises(CheckpointError, match="did not complete"):
        load_checkpoint(model, opt, ckpt)


def test_best_validation_checkpoint_is_saved_and_marked(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = GRPOConfig.model_validate(
        {**SMALL, "max_steps": 4, "eval_interval": 1, "eval_samples": 2, "eval_temperature": 1.0, "learning_rate": 0.01}
    )
    rec = Recorder()
    train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, valid_rows=ROWS[:4], seed=2)
    rewards = [m.scores.valid_reward_mean for m in rec.steps]
    running, expected = -1.0, []
    for step, r in enumerate(rewards, start=1):
        if r > running:
            running, expected = r, [*expected, step]
    assert rec.best == expected and 1 in rec.best  # the first validation is the best so far
    assert {s for s, _, _ in rec.ckpts} == {*expected, 4}  # every best step has a checkpoint, plus the last


def test_shared_prefill_generates_what_the_plain_path_does(tiny_model_dir: Path) -> None:
    model, tok = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    with torch.no_grad():  # a peaked, non-trivial policy so greedy decoding has no near-ties
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
    prompts = ["12+3=", "1+1=", "7*8=?"]
    kw = {"group_size": 3, "max_new_tokens": 6, "top_p": 1.0, "seed": 4}
    for temperature in (0.0, 1.0):
        sampling = Sampling(temperature=temperature, **kw)
        shared = sample(model, tok, prompts, sampling, share_prefill=True)
        plain = sample(model, tok, prompts, sampling, share_prefill=False)
        assert torch.equal(shared.completion_ids, plain.completion_ids), temperature
        assert torch.equal(shared.prompt_ids, plain.prompt_ids) and shared.texts == plain.texts


def test_dynamic_sampling_and_gfpo_run_end_to_end(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = GRPOConfig.model_validate(
        {**SMALL, "dynamic_sampling": True, "dynamic_sampling_max_rounds": 5, "gfpo_sample_size": 6}
    )
    rec = Recorder()
    train(cfg, tiny_model_dir, ROWS, [StartsWithDigit()], callbacks=rec, work_dir=tmp_path, seed=3)
    for m in rec.steps:
        s = m.sampling
        assert s.groups_trained <= 2 <= s.groups_sampled <= 2 * s.sampling_rounds
        assert m.tokens <= s.groups_trained * 4 * 5  # 4 kept of 6 sampled per group
