"""Jobs pooled on a CUDA device (grpo_core.pool), their rollouts decoded together (grpo_core.joint): the tenants'
threads train on the pool's device, share one decode per round, and each trains its adapter within the stated bound
of its run alone (fp32)."""

from __future__ import annotations

from pathlib import Path

from grpo_core.hardware.device import resolve_placement
from grpo_core.pool import TenantSpec, TurnPool
from grpo_core.trainer import TrainResult, train
from tests.training import ROWS, DigitShare, Recorder
from tests.unit.test_pool import adapter, cfg
from tests.unit.test_pool_together import ADAPTER_BOUND


def test_tenants_sample_together_on_the_gpu_each_as_alone_within_the_bound(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    hp = {"device": "cuda", "precision": "fp32", "rollout_engine": "merged"}
    seeds = (1, 2, 3)
    alone = [
        train(cfg(**hp), tiny_model_dir, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=tmp_path / str(s), seed=s)
        for s in seeds
    ]
    recs = [Recorder() for _ in seeds]
    placement = resolve_placement("cuda", "fp32")
    with TurnPool(tiny_model_dir, placement) as pool:  # together by default on a GPU
        assert pool.together
        for s, rec in zip(seeds, recs, strict=True):
            pool.add(TenantSpec(cfg(**hp), ROWS, [DigitShare()], rec, tmp_path / f"p{s}", seed=s))
        results = pool.run()
        decodes = pool.joint_decodes
    assert decodes == 3  # one per round, every tenant's rows in it
    for got, ref, rec in zip(results, alone, recs, strict=True):
        assert isinstance(got, TrainResult) and got.steps_done == ref.steps_done == 3
        assert all(m.memory is not None and m.memory.device.startswith("cuda") for m in rec.steps)
        a, b = adapter(got.final_checkpoint), adapter(ref.final_checkpoint)
        assert all(t.device.type == "cpu" for t in a.values())
        assert max(float((a[k] - b[k]).abs().max()) for k in a) <= ADAPTER_BOUND
