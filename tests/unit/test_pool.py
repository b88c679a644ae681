"""grpo_core.pool on the tiny random model: tenants in turn on one resident policy train exactly what each trains
alone (fp32, bit for bit: adapters, metrics), a failing tenant ends alone, a stopped one checkpoints and resumes
exactly, and the pool refuses what it cannot hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from grpo_core.errors import UserError
from grpo_core.hardware.device import resolve_placement
from grpo_core.pool import TenantSpec, TurnPool, train_in_turn
from grpo_core.rewards.base import GraderResult
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import TrainResult, train
from tests.training import ROWS, DigitShare, Recorder

BASE = {"group_size": 4, "batch_size": 2, "max_steps": 3, "max_completion_tokens": 5, "precision": "fp32"}


def cfg(**extra: Any) -> GRPOConfig:
    return GRPOConfig.model_validate({**BASE, "checkpoint_interval": 1, **extra})


def adapter(ckpt: Path | None) -> dict[str, torch.Tensor]:
    assert ckpt is not None
    return load_file(str(ckpt / "adapter_model.safetensors"))


def same_adapter(a: Path | None, b: Path | None) -> None:
    x, y = adapter(a), adapter(b)
    assert x.keys() == y.keys()
    for k in x:
        assert torch.equal(x[k], y[k]), k


def losses(rec: Recorder) -> list[float]:
    return [m.loss for m in rec.steps]


TENANTS = [
    {"seed": 1, "cfg": {"learning_rate": 0.01}},
    {"seed": 2, "cfg": {"learning_rate": 0.005, "beta": 0.05, "max_steps": 2}},
    {"seed": 3, "cfg": {"learning_rate": 0.008, "group_size": 2, "batch_size": 3}},
]


def test_tenants_in_turn_train_what_each_trains_alone(tiny_model_dir: Path, tmp_path: Path) -> None:
    alone: list[tuple[TrainResult, Recorder]] = []
    for i, t in enumerate(TENANTS):
        rec = Recorder()
        result = train(cfg(**t["cfg"]), tiny_model_dir, ROWS, [DigitShare()], callbacks=rec,
                       work_dir=tmp_path / f"alone{i}", seed=t["seed"])  # fmt: skip
        alone.append((result, rec))
    recs = [Recorder() for _ in TENANTS]
    specs = [
        TenantSpec(cfg(**t["cfg"]), ROWS, [DigitShare()], rec, tmp_path / f"pool{i}", seed=t["seed"])
        for i, (t, rec) in enumerate(zip(TENANTS, recs, strict=True))
    ]
    pooled = train_in_turn(tiny_model_dir, specs)
    for (result, rec), got, prec in zip(alone, pooled, recs, strict=True):
        assert isinstance(got, TrainResult) and got.steps_done == result.steps_done and not got.stopped
        same_adapter(got.final_checkpoint, result.final_checkpoint)
        assert losses(prec) == losses(rec)
        assert [m.scores.train_reward_mean for m in prec.steps] == [m.scores.train_reward_mean for m in rec.steps]
    first, third = (adapter(r.final_checkpoint) for r in (pooled[0], pooled[2]) if isinstance(r, TrainResult))
    assert any(not torch.equal(first[k], third[k]) for k in first)  # each its own adapter


class FailsOnCall(DigitShare):
    """DigitShare until its ``n``-th call, then a user's grader bug."""

    def __init__(self, n: int) -> None:
        self.calls, self.n = 0, n

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        self.calls += 1
        if self.calls >= self.n:
            raise ZeroDivisionError("the grader's own bug")
        return super().score(texts, rows)


def test_a_failing_tenant_ends_alone_a_stopped_one_resumes_exactly_and_a_late_one_joins(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Tenant 0 fails at its second step; tenant 1 is paused after one step, then resumed from its checkpoint in
    another pool; tenant 2 joins after the first round. Tenants 1 and 2 end with their runs alone's adapters."""
    placement = resolve_placement("cpu", "fp32")
    alone = {}
    for seed in (2, 3):
        out = train(cfg(), tiny_model_dir, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=tmp_path / f"a{seed}",
                    seed=seed)  # fmt: skip
        alone[seed] = out.final_checkpoint
    paused = Recorder(stop_after=1)
    with TurnPool(tiny_model_dir, placement) as pool:
        pool.add(TenantSpec(cfg(), ROWS, [FailsOnCall(2)], Recorder(), tmp_path / "p0", seed=1))
        pool.add(TenantSpec(cfg(), ROWS, [DigitShare()], paused, tmp_path / "p1", seed=2))
        pool.round()
        pool.add(TenantSpec(cfg(), ROWS, [DigitShare()], Recorder(), tmp_path / "p2", seed=3))
        failed, stopped, late = pool.run()
    assert isinstance(failed, ZeroDivisionError)
    assert isinstance(stopped, TrainResult) and stopped.stopped and stopped.steps_done == 1
    assert isinstance(late, TrainResult) and late.steps_done == 3
    same_adapter(late.final_checkpoint, alone[3])
    resumed = train_in_turn(
        tiny_model_dir,
        [
            TenantSpec(
                cfg(), ROWS, [DigitShare()], Recorder(), tmp_path / "p1b", seed=2, resume_from=stopped.final_checkpoint
            )
        ],
        placement=placement,
    )[0]
    assert isinstance(resumed, TrainResult) and resumed.steps_done == 3
    same_adapter(resumed.final_checkpoint, alone[2])


@pytest.mark.parametrize(
    ("second", "words"),
    [
        ({"max_staleness": 1}, "max_staleness"),
        ({"lora": {"rank": 4}}, "lora"),
        ({"rollout_engine": "transformers"}, "rollout_engine"),
    ],
)
def test_the_pool_refuses_what_it_cannot_hold(tiny_model_dir: Path, tmp_path: Path, second: dict[str, Any],
                                              words: str) -> None:  # fmt: skip
    with TurnPool(tiny_model_dir, resolve_placement("cpu", "fp32")) as pool:
        pool.add(TenantSpec(cfg(), ROWS, [DigitShare()], Recorder(), tmp_path / "ok", seed=1))
        with pytest.raises(UserError, match=words):
            pool.add(TenantSpec(cfg(**second), ROWS, [DigitShare()], Recorder(), tmp_path / "no", seed=2))
        assert pool.tenants == 1
