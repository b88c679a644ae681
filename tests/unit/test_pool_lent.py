"""A pool of jobs and training-API runs on one resident base, both ways: a pool lends its resident to a run of its
adapter shape (grpo_core.training_api.shared.SharedBases.lend), and a pool of jobs borrows the base a run loaded
(``borrow``, grpo_core.pool.TurnPool with ``borrowed``). The run's calls come from a thread of their own, taking the
lock the jobs' turns take, while the pool's rounds go on, and every job and the run end bit for bit (fp32) as each
alone; a run of another shape gets a base of its own; a lent resident outlives its runs, and a borrowed one is freed
once neither its runs nor the pool hold it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from grpo_core.hardware.baton import Baton
from grpo_core.hardware.device import resolve_placement
from grpo_core.pool import TenantSpec, TurnPool
from grpo_core.trainer import TrainResult, train
from grpo_core.training_api.model import TrainingModel
from grpo_core.training_api.shared import SharedBases
from grpo_core.training_api.spec import Datum
from tests.training import ROWS, DigitShare, Recorder
from tests.unit.test_pool import TENANTS, cfg, losses, same_adapter

ADAM = {"lr": 2e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 1.0}
DATA = [
    Datum([1, 12, 13, 14], {"target_tokens": [12, 13, 14, 15], "weights": [1.0] * 4}),
    Datum([1, 30, 31], {"target_tokens": [30, 31, 32], "weights": [1.0] * 3}),
]
STEPS = 5


def session(run: TrainingModel, lock: Baton | None = None) -> tuple[list[float], list[list[float]]]:
    """STEPS of forward_backward and optim_step, each call holding ``lock`` (the pool's baton) when given; the
    losses and the final log-probs."""
    out = []
    for _ in range(STEPS):
        with lock or Baton():
            fb = run.forward_backward(DATA, "cross_entropy", {})
        with lock or Baton():
            run.optim_step(**ADAM)
        out.append(fb.metrics["loss:sum"])
    with lock or Baton():
        final = run.forward_backward(DATA, "cross_entropy", {}, backward=False)
    return out, final.logprobs


def trained_alone(
    model_dir: Path, tmp_path: Path, jobs: list[dict[str, Any]]
) -> tuple[list[tuple[TrainResult, Recorder]], tuple[list[float], list[list[float]]]]:
    """Each job trained alone, and the run's session alone on a base of its own."""
    alone = []
    for i, t in enumerate(jobs):
        rec = Recorder()
        result = train(cfg(**t["cfg"]), model_dir, ROWS, [DigitShare()], callbacks=rec,
                       work_dir=tmp_path / f"alone{i}", seed=t["seed"])  # fmt: skip
        alone.append((result, rec))
    by_itself = TrainingModel(model_dir, rank=16, seed=7)
    want = session(by_itself)
    by_itself.close()
    return alone, want


def test_a_session_run_on_a_pools_resident_and_the_pools_jobs_each_train_as_alone(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    jobs = TENANTS[:2]
    alone, want = trained_alone(tiny_model_dir, tmp_path, jobs)

    recs = [Recorder() for _ in jobs]
    placement = resolve_placement("cpu", "fp32")
    with TurnPool(tiny_model_dir, placement, together=False) as pool:
        for i, (t, rec) in enumerate(zip(jobs, recs, strict=True)):
            pool.add(TenantSpec(cfg(**t["cfg"]), ROWS, [DigitShare()], rec, tmp_path / f"pool{i}", seed=t["seed"]))
        shared = SharedBases()
        shared.lend(pool.resident, tiny_model_dir, pool.placed(cfg()), None)
        with pool.baton:
            run = TrainingModel(tiny_model_dir, rank=16, seed=7, shared=shared)
            other = TrainingModel(tiny_model_dir, rank=4, seed=7, shared=shared)  # another shape: its own base
        assert run.base is not None and run.base.resident is pool.resident and run.model is pool.resident.model
        assert other.base is not None and other.base.resident is not pool.resident and len(shared) == 2
        got: list[tuple[list[float], list[list[float]]]] = []
        thread = threading.Thread(target=lambda: got.append(session(run, pool.baton)))
        thread.start()
        while pool.tenants:
            pool.round()
        thread.join(timeout=120)
        results = list(pool.results)
        with pool.baton:
            run.close()
            other.close()
        assert len(shared) == 1 and pool.resident.model is not None  # the lent resident stays the pool's
    assert got == [want]  # bit for bit: losses and final log-probs
    for (result, rec), pooled, prec in zip(alone, results, recs, strict=True):
        assert isinstance(pooled, TrainResult) and pooled.steps_done == result.steps_done
        same_adapter(pooled.final_checkpoint, result.final_checkpoint)
        assert losses(prec) == losses(rec)
    assert torch.is_grad_enabled()


def test_a_pool_of_jobs_on_a_training_runs_resident_and_the_run_each_train_as_alone(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """The reverse: a pool of jobs borrows the base a training run loaded (SharedBases.borrow, TurnPool with
    ``borrowed``); the jobs train in rounds while the run's calls come from a thread of their own, both bit for bit
    as alone; the pool closes only its engine, and the base is freed once neither the run nor the pool holds it."""
    jobs = TENANTS[:2]
    alone, want = trained_alone(tiny_model_dir, tmp_path, jobs)

    shared, lock = SharedBases(), Baton()
    run = TrainingModel(tiny_model_dir, rank=16, seed=7, shared=shared)
    token = object()  # the pool's hold on the base
    (base,) = shared.loaded()
    shared.borrow(token, base)
    assert base.cfg is not None and base.model_dir == tiny_model_dir
    recs = [Recorder() for _ in jobs]
    placement = resolve_placement(base.cfg.device, base.cfg.precision)
    with TurnPool(tiny_model_dir, placement, together=False, resident=base.resident, baton=lock, borrowed=True) as pool:
        for i, (t, rec) in enumerate(zip(jobs, recs, strict=True)):
            pool.add(TenantSpec(cfg(**t["cfg"]), ROWS, [DigitShare()], rec, tmp_path / f"pool{i}", seed=t["seed"]))
        got: list[tuple[list[float], list[list[float]]]] = []
        thread = threading.Thread(target=lambda: got.append(session(run, lock)))
        thread.start()
        while pool.tenants:
            pool.round()
        thread.join(timeout=120)
        results = list(pool.results)
    assert base.resident.model is not None and base.resident.engine is None  # the run's base, without the engine
    with lock:
        run.close()
    assert len(shared) == 1  # the pool still holds it
    shared.leave(token, base)
    assert len(shared) == 0 and base.resident.model is None
    assert got == [want]
    for (result, rec), pooled, prec in zip(alone, results, recs, strict=True):
        assert isinstance(pooled, TrainResult) and pooled.steps_done == result.steps_done
        same_adapter(pooled.final_checkpoint, result.final_checkpoint)
        assert losses(prec) == losses(rec)
