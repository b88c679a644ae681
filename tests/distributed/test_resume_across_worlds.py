"""A checkpoint saved by 2 ranks resumes in 1 process: allowed, said in an event, and exact.

The world-2 run (``torchrun --nproc-per-node 2`` on gloo) trains 2 of 4 steps and stops with a checkpoint; a plain
process resumes from it for steps 3 and 4. Its adapter equals an uninterrupted one-process run of 4 steps (to
1e-6; measured bit-identical), and its steps' metrics equal that run's, because everything a step depends on
carries over (adapter, optimizer, schedule, data cursor) and the sampling noise is keyed by step and row, not by
the RNG state a rank held. Same one-thread-per-process setting as test_exactness.py, for the reason given there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from scripts.local_stack import free_port
from tests.distributed.test_exactness import FSDP_WEIGHT_ATOL, WEIGHT_ATOL, _close, _run

NAME = "token_mean-group"


@pytest.mark.parametrize(("sharding", "atol"), [("replicate", WEIGHT_ATOL), ("fsdp", FSDP_WEIGHT_ATOL)])
def test_a_checkpoint_of_two_ranks_resumes_in_one_process_exactly(
    tiny_model_dir: Path, tmp_path: Path, sharding: str, atol: float
) -> None:
    """Also from ranks that sharded the model with FSDP2: their checkpoint is the same adapter and optimizer files
    (grpo_core.hardware.sharding), so one process resumes it; the weights then differ from the uninterrupted run only by
    FSDP's rounding in the first 2 steps (test_exactness.py says why)."""
    args = ["-m", "tests.dist_driver", "--model", str(tiny_model_dir), "--only", NAME, "--max-steps", "4"]
    args += ["--checkpoint-interval", "2"]
    two, one, straight = tmp_path / "two", tmp_path / "one", tmp_path / "straight"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port"]
    sharded = ["--sharding", sharding]
    _run([*torchrun, str(free_port()), *args, *sharded, "--stop-after", "2", "--out", str(two)], two, cpus=2)
    saved = json.loads((two / f"{NAME}.run.json").read_text())["checkpoints"]
    assert [Path(p).name for p in saved] == ["step-000002"], saved

    _run([sys.executable, *args, "--resume-from", saved[-1], "--out", str(one)], one, cpus=1)
    _run([sys.executable, *args, "--out", str(straight)], straight, cpus=1)

    messages = json.loads((one / f"{NAME}.run.json").read_text())["messages"]
    assert any(m.startswith("Resumed from step 2 on 1 rank(s) from a checkpoint saved by 2:") for m in messages), (
        messages
    )
    resumed, whole = (json.loads((d / f"{NAME}.json").read_text()) for d in (one, straight))
    assert [m["step"] for m in resumed] == [3, 4] and [m["step"] for m in whole] == [1, 2, 3, 4]
    diffs = _close(whole[2:], resumed, NAME)
    assert not diffs, diffs[:10]
    w1, w2 = torch.load(one / f"{NAME}.pt"), torch.load(straight / f"{NAME}.pt")
    assert w1.keys() == w2.keys()
    worst = max(float((w1[k] - w2[k]).abs().max()) for k in w1)
    assert worst <= atol, f"the resumed adapter differs from the uninterrupted one by {worst:.2e}"
