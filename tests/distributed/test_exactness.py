"""World size 1 vs 2 on gloo: the same job trains the same adapter (to 1e-6) with the same per-step metrics.

Both worlds run tests/dist_driver.py (3 steps of the tiny model, fp32, fixed seeds) over every configuration in
its ``CONFIGS``: the three loss aggregations with group and batch reward scaling, β > 0 with μ = 2, dynamic
sampling with GFPO, and REINFORCE++ whitening. World size 1 is a plain process (no torchrun, no process group);
world size 2 is ``torchrun --nproc-per-node 2``. bnpo needs no exception: the micro-batches are planned over the
whole batch and dealt to ranks, so each is the one a single process computes (TRL's per-device micro-batches
make its bnpo depend on the world size; ours does not).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from scripts.local_stack import free_port
from tests.dist_driver import CONFIGS

ROOT = Path(__file__).resolve().parents[2]
WEIGHT_ATOL = 1e-6


def _run(cmd: list[str], out: Path, cpus: int) -> None:
    """``cmd`` pinned to ``cpus`` CPUs, so that every process of either world computes with one thread.

    The trainer gives each rank ``usable_cpus() // ranks`` threads, and the number of threads changes fp32
    results: a GEMM or reduction split over two threads adds in another order (measured on an AVX2 EPYC: a LoRA
    gradient 2e-9 apart, which Adam turned into 1e-5 in the weights after 3 steps). One process on two threads
    against two on one each would compare thread counts, not world sizes."""
    out.mkdir(parents=True, exist_ok=True)
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    mask = sorted(os.sched_getaffinity(0))[:cpus]
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=lambda: os.sched_setaffinity(0, mask),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]


@pytest.fixture(scope="module")
def worlds(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    one, two = tmp_path_factory.mktemp("world1"), tmp_path_factory.mktemp("world2")
    args = ["-m", "tests.dist_driver", "--model", str(tiny_model_dir)]
    _run([sys.executable, *args, "--out", str(one)], one, cpus=1)
    port = str(free_port())
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", port]
    _run([*torchrun, *args, "--out", str(two)], two, cpus=2)
    return one, two


@pytest.fixture(scope="module")
def fsdp(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World size 2 with ``sharding: fsdp`` (the base weights sharded with FSDP2, grpo_core.hardware.sharding)."""
    out = tmp_path_factory.mktemp("fsdp")
    args = ["-m", "tests.dist_driver", "--model", str(tiny_model_dir), "--sharding", "fsdp"]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port"]
    _run([*torchrun, str(free_port()), *args, "--out", str(out)], out, cpus=2)
    return out


def _close(a: Any, b: Any, path: str) -> list[str]:
    """Where two metrics trees differ beyond float rounding (numbers: 1e-5 relative or 1e-6 absolute)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _close(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _close(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float | int):
        return [] if math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6) else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_world_size_two_trains_what_one_process_trains(worlds: tuple[Path, Path], name: str) -> None:
    one, two = worlds
    w1, w2 = torch.load(one / f"{name}.pt"), torch.load(two / f"{name}.pt")
    assert w1.keys() == w2.keys() and any("lora_B" in k for k in w1)
    assert any(float(v.abs().max()) > 1e-2 for k, v in w1.items() if "lora_B" in k)  # it trained
    worst = max(float((w1[k] - w2[k]).abs().max()) for k in w1)
    assert worst <= WEIGHT_ATOL, f"{name}: LoRA weights differ by {worst:.2e}"
    m1, m2 = (json.loads((d / f"{name}.json").read_text()) for d in (one, two))
    assert [m["step"] for m in m1] == [1, 2, 3]
    if "eval_interval" in CONFIGS[name]:  # validation ran (rank 0 scores it, every rank takes its decision)
        assert [m["scores"]["valid_reward_mean"] is not None for m in m2] == [False, True, True]
    diffs = _close(m1, m2, name)
    assert not diffs, diffs[:10]


# FSDP's ranks compute each prompt once per row (prefix sharing adds a forward whose count depends on the data,
# which FSDP's per-layer collectives cannot allow), one process once per group: the same maths, other roundings,
# which Adam carries into the weights over 3 steps: measured at most 2.9e-5 on an AVX2 EPYC and 1.45e-4 on an
# AVX-512 EPYC (token_mean-batch; its kernels round otherwise). A wrong reduction (a missing all-reduce, a world
# size in a normaliser) moves a weight by a whole Adam update, about the learning rate (1e-2): 5e-4 stays far below.
FSDP_WEIGHT_ATOL = 5e-4


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fsdp_on_two_ranks_trains_what_one_process_trains(worlds: tuple[Path, Path], fsdp: Path, name: str) -> None:
    one, _ = worlds
    w1, w2 = torch.load(one / f"{name}.pt"), torch.load(fsdp / f"{name}.pt")
    assert w1.keys() == w2.keys() and any("lora_B" in k for k in w1)
    worst = max(float((w1[k] - w2[k]).abs().max()) for k in w1)
    assert worst <= FSDP_WEIGHT_ATOL, f"{name}: LoRA weights differ by {worst:.2e}"
    run = json.loads((fsdp / f"{name}.run.json").read_text())
    assert (run["execution"]["sharding"], run["execution"]["world_size"]) == ("fsdp", 2), run["execution"]
    assert run["sharded_parameters"] >= 2 * 7, run  # every linear weight of the tiny model's 2 layers, at least
    m1, m2 = (json.loads((d / f"{name}.json").read_text()) for d in (one, fsdp))
    diffs = _close(m1, m2, name)
    assert not diffs, diffs[:10]
