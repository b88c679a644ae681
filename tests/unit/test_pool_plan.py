"""What a pool holds: grpo_core.hardware.memory.pool_room on hand-computed figures (the first tenant's measured peak,
each more job's adapter state and, working together, its rows' KV cache, each training run's adapter state and its
sampler's copy of the adapted weights), the KV cache of a token from a config, and the worker's choice between
POOL_TENANTS, the memory plan on a GPU and no pool on a CPU."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from grpo_core.hardware.device import resolve_placement
from grpo_core.hardware.memory import POOL_CAP, TENANT_STATE_BYTES, kv_token_bytes, pool_room
from grpo_core.pool import TurnPool
from worker.settings import WorkerSettings
from worker.slots import job_slots

GIB = 2**30


def test_each_more_tenant_costs_its_adapter_state_and_working_together_its_kv_cache() -> None:
    assert TENANT_STATE_BYTES == 20  # values, gradient, two AdamW moments and the parked copy, fp32
    # 1000 bytes, 90% plannable: 900; the first tenant peaked at 800, so 100 are left; 2 trained parameters cost 40
    assert pool_room(1000, 800, 2).jobs == 1 + 100 // 40 == 3
    assert pool_room(1000, 800, 2, kv_per_tenant=60).jobs == 1 + 100 // 100 == 2
    assert pool_room(1000, 950, 2).jobs == 1  # the first tenant alone is past the margin: no room, still 1
    assert pool_room(1000, 0, 1, cap=5).jobs == 5
    # a training run costs its adapter's state and its sampler's merged copy of the adapted weights
    plan = pool_room(1000, 800, 2, adapted_bytes=30)
    assert (plan.per_job, plan.per_run) == (40, 70)
    assert plan.fits(2, 0) and plan.fits(1, 1) and not plan.fits(2, 1) and not plan.fits(1, 2)  # 40 + 70 > 100
    assert not pool_room(10**9, 0, 1, cap=3).fits(2, 2)  # the cap counts jobs and runs together
    # the figure: a 0.5B job's step peaked at 9 GiB of 80 on an H100; a rank-16 adapter on every linear
    # layer of Qwen2.5-0.5B has 8.8M parameters (176 MB each more): memory is not what limits that pool
    assert pool_room(80 * GIB, 9 * GIB, 8_798_208).jobs == POOL_CAP


def test_a_tokens_kv_cache_from_the_config() -> None:
    qwen_05b = SimpleNamespace(config=SimpleNamespace(num_hidden_layers=24, num_attention_heads=14, hidden_size=896,
                                                      num_key_value_heads=2))  # fmt: skip
    assert kv_token_bytes(qwen_05b) == 24 * 2 * 2 * 64 * 2 == 12_288  # layers × (K, V) × kv heads × head dim × bf16
    explicit = SimpleNamespace(config=SimpleNamespace(num_hidden_layers=2, num_attention_heads=4, hidden_size=64,
                                                      head_dim=32))  # fmt: skip
    assert kv_token_bytes(explicit, 4) == 2 * 2 * 4 * 32 * 4  # no kv heads given: every head has its own


def test_a_pool_on_a_cpu_is_not_limited_by_memory(tiny_model_dir: Path) -> None:
    with TurnPool(tiny_model_dir, resolve_placement("cpu", "fp32")) as pool:
        assert pool.planned_room(3).jobs == 3 and pool.planned_room(3).fits(2, 1)


def test_the_worker_sizes_a_pool_of_jobs_from_the_setting_or_the_memory_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    assert job_slots(WorkerSettings(state_dir=tmp_path, pool_tenants=3)) == (3, False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert job_slots(WorkerSettings(state_dir=tmp_path)) == (1, False)  # a CPU: no pool
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert job_slots(WorkerSettings(state_dir=tmp_path)) == (POOL_CAP, True)  # a GPU: planned after a first step
