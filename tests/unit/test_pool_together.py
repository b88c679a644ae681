"""grpo_core.pool with ``together``: tenants' rollouts decoded in one pass and their updates in shared passes
(grpo_core.joint), each row and token through its own adapter, on the tiny random model in fp32. Each tenant samples
the tokens it samples alone, its losses and adapter within rounding of its run alone; one that asks for exact
reproduction (``pool_exact``) is bit for bit its run alone; a failing tenant ends alone; and a step's timing counts
the tenant's own work, not its wait for others'."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from bench.update_counts import CountOps
from grpo_core.hardware.device import resolve_placement
from grpo_core.joint import Ask, JointWork
from grpo_core.policy import load_policy
from grpo_core.pool import TenantSpec, TurnPool
from grpo_core.resident import Resident
from grpo_core.rollout.engines.base import Sampling
from grpo_core.trainer import TrainResult, train
from grpo_core.update.lora_fused import row_adapters
from tests.training import ROWS, DigitShare, Recorder
from tests.unit.test_pool import FailsOnCall, adapter, cfg, same_adapter

TENANTS = [
    {"seed": 1, "cfg": {"learning_rate": 0.01}},
    {"seed": 2, "cfg": {"learning_rate": 0.005, "beta": 0.05}},
    {"seed": 3, "cfg": {"learning_rate": 0.008, "group_size": 2, "batch_size": 3}},  # a decode group of its own
    {"seed": 4, "cfg": {"learning_rate": 0.01, "pool_exact": True}},  # samples alone, in turn
]
# What a rollout decoded together may differ by from the same rollout alone in fp32, and what three steps of Adam
# make of it in the adapter (tests/unit/test_training_batched.py holds the same bound for one decode).
LOGP_BOUND = 1e-5
ADAPTER_BOUND = 1e-4


def alone(tiny_model_dir: Path, tmp_path: Path, t: dict[str, Any], name: str) -> tuple[TrainResult, Recorder]:
    rec = Recorder()
    result = train(cfg(**t["cfg"]), tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path / name,
                   seed=t["seed"])  # fmt: skip
    return result, rec


def test_tenants_sampling_together_train_what_each_trains_alone_within_rounding(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    runs = [alone(tiny_model_dir, tmp_path, t, f"alone{i}") for i, t in enumerate(TENANTS)]
    recs = [Recorder() for _ in TENANTS]
    with TurnPool(tiny_model_dir, resolve_placement("cpu", "fp32"), together=True) as pool:
        for i, (t, rec) in enumerate(zip(TENANTS, recs, strict=True)):
            pool.add(TenantSpec(cfg(**t["cfg"]), ROWS, [DigitShare()], rec, tmp_path / f"pool{i}", seed=t["seed"]))
        walls = []
        while pool.tenants:
            start = time.perf_counter()
            pool.round()
            walls.append(time.perf_counter() - start)
        results, decodes, updates = pool.results, pool.joint_decodes, pool.joint_updates
    # three rounds, each one decode of tenants 0 and 1 together and one of tenant 2 (another group size), and one
    # update of tenants 0, 1 and 2 together (their passes compute alike whatever their group sizes and β); tenant 3
    # alone, in turn
    assert decodes == 6
    assert updates == 3
    for i, ((result, rec), got, prec) in enumerate(zip(runs, results, recs, strict=True)):
        assert isinstance(got, TrainResult) and got.steps_done == result.steps_done == 3
        if TENANTS[i]["cfg"].get("pool_exact"):
            same_adapter(got.final_checkpoint, result.final_checkpoint)
            assert [m.loss for m in prec.steps] == [m.loss for m in rec.steps]
            continue
        # the same tokens, so the same rewards; the rest within rounding
        assert [m.scores.train_reward_mean for m in prec.steps] == [m.scores.train_reward_mean for m in rec.steps]
        assert [m.completion_length_mean for m in prec.steps] == [m.completion_length_mean for m in rec.steps]
        assert [m.loss for m in prec.steps] == pytest.approx([m.loss for m in rec.steps], abs=LOGP_BOUND)
        a, b = adapter(got.final_checkpoint), adapter(result.final_checkpoint)
        assert max(float((a[k] - b[k]).abs().max()) for k in a) <= ADAPTER_BOUND
    # billing: one tenant computes at a time, so the tenants' own step times fit in each round's wall time
    for step, wall in enumerate(walls):
        own = sum(r.steps[step].timing.step.full_iteration for r in recs if len(r.steps) > step)
        assert own <= wall + 0.05, (step, own, wall)


def test_a_failing_tenant_ends_alone_while_the_others_sample_together(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Tenant 0's grader fails at its second step (its decode went fine); tenant 1 is stopped after one step; tenants
    2 and 3 go on sampling together and finish."""
    stopped_rec = Recorder(stop_after=1)
    with TurnPool(tiny_model_dir, resolve_placement("cpu", "fp32"), together=True) as pool:
        pool.add(TenantSpec(cfg(), ROWS, [FailsOnCall(2)], Recorder(), tmp_path / "p0", seed=1))
        pool.add(TenantSpec(cfg(), ROWS, [DigitShare()], stopped_rec, tmp_path / "p1", seed=2))
        pool.add(TenantSpec(cfg(), ROWS, [DigitShare()], Recorder(), tmp_path / "p2", seed=3))
        pool.add(TenantSpec(cfg(), ROWS, [DigitShare()], Recorder(), tmp_path / "p3", seed=4))
        failed, stopped, *done = pool.run()
        decodes = pool.joint_decodes
    assert isinstance(failed, ZeroDivisionError)
    assert isinstance(stopped, TrainResult) and stopped.stopped and stopped.steps_done == 1
    assert all(isinstance(r, TrainResult) and r.steps_done == 3 and not r.stopped for r in done)
    assert decodes == 3  # one per round, whoever was left in it
    first, second = (adapter(r.final_checkpoint) for r in done if isinstance(r, TrainResult))
    assert any(not torch.equal(first[k], second[k]) for k in first)  # each its own adapter


def test_a_decode_step_of_more_tenants_launches_no_more_kernels(tiny_model_dir: Path) -> None:
    """What makes sampling together pay on a GPU, where a decode step of one job's rows is launch-bound: a forward of
    every tenant's rows (spans of one length) launches what a forward of one tenant's rows launches."""
    model, _ = load_policy(tiny_model_dir, cfg(), 1)
    slot = [p for p in model.parameters() if p.requires_grad]
    values = [p.detach().clone() for p in slot]
    counted = []
    for tenants in (1, 4):
        ids = torch.randint(0, 50, (8 * tenants, 1))
        with row_adapters(model, [values] * tenants, slot, [8] * tenants), torch.inference_mode(), CountOps() as c:
            model.get_base_model()(input_ids=ids)
        counted.append(c.counts.launches)
    assert counted[0] == counted[1] > 0


def test_a_joint_pass_that_fails_is_run_again_per_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass of several tenants that fails (out of memory) runs each tenant's ask alone: only the tenant whose own
    pass fails gets the error."""
    work = JointWork(Resident(), threading.Lock())
    good, bad = object(), object()
    asks = [Ask(o, Sampling(2, 4, 1.0, 1.0, seed=1), prompts=["x"]) for o in (good, bad)]

    def run(group: list[Ask]) -> list[str]:
        if len(group) > 1:
            raise torch.OutOfMemoryError("the pass of both")
        if group[0].owner is bad:
            raise ValueError("its own data")
        return ["sampled"]

    monkeypatch.setattr(work, "_run", run)
    work.run(asks)
    assert asks[0].result == "sampled" and asks[0].error is None
    assert isinstance(asks[1].error, ValueError) and asks[1].result is None
    assert all(a.ready.is_set() for a in asks)
