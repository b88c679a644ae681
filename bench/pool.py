"""Jobs pooled on one worker (grpo_core.pool: tenants in turn on one resident model, their rollouts decoded together
or in turn) against the same jobs one after the other in one process, as a worker without a pool runs them.

    .venv/bin/python -m bench.pool [--jobs 4] [--steps 3] [--model SmolLM2-135M-Instruct] [--device cpu]
                                   [--together auto|on|off]

Each side runs in a fresh process of its own (its peak RSS is its own), and so does one job alone (the memory
reference). Prints wall time, peak memory (RSS on a CPU, peak allocated on a GPU) and aggregate steps/s of each
side, and the ratios issue 45 names: pooled wall / sequential wall (target ≤ 0.6) and pooled peak / one job's peak
(target ≤ 1.5). ``--together``: the pool decodes its tenants' rollouts in one pass (grpo_core.joint; auto: on a
GPU). Updates run in turn either way, every step's arithmetic as a job alone computes it, so on a CPU, where the
update and the decode are compute-bound, a pool saves little more than the model load and the warm-up per job. The
GPU target (eight 0.5B-shape jobs on one H100, aggregate steps/s ≥ 4x one job's) is
``--model qwen2.5-0.5b --jobs 8 --device cuda``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROWS = [
    {"prompt": f"What is {a} + {b}? Answer with a number.", "answer": str(a + b)} for a in range(6) for b in range(6)
]
CONFIG = {
    "group_size": 8,
    "batch_size": 4,
    "max_completion_tokens": 24,
    "learning_rate": 5e-5,
    "checkpoint_interval": 0,
}


class DigitShare:
    """A dense in-process reward (the share of digits in the text): every group has a gradient, no sandbox."""

    name = "digits"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> Any:
        from grpo_core.rewards.base import GraderResult

        return GraderResult([sum(c.isdigit() for c in t) / max(len(t), 1) for t in texts], [None] * len(texts))

    def close(self) -> None:
        pass


def model_dir(name: str) -> Path:
    from grpo_core.models.catalog import SMOLLM2_ID, prepare_smollm2

    if name == SMOLLM2_ID:
        return prepare_smollm2(Path(".state/models"))
    from bench.real_models import build  # random weights from a published config (SHAPES' names)

    dest = Path(".state/bench-models") / name
    return dest if (dest / "config.json").is_file() else build(name, dest)


def peak_gb(device: str) -> float:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def side(kind: str, jobs: int, steps: int, model: str, device: str, together: bool | None) -> dict[str, float]:
    """One side in this process: ``pooled`` (one TurnPool), ``sequential`` (train() per job, each loading its
    model), or ``one`` (a single job)."""
    from grpo_core.pool import TenantSpec, train_in_turn
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.trainer import train
    from tests.training import Recorder

    folder = model_dir(model)
    cfg = GRPOConfig.model_validate({**CONFIG, "max_steps": steps, "device": device})
    n = 1 if kind == "one" else jobs
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        if kind == "pooled":
            specs = [TenantSpec(cfg, ROWS, [DigitShare()], Recorder(), Path(tmp) / str(i), seed=i) for i in range(n)]
            results = train_in_turn(folder, specs, together=together)
            assert all(not isinstance(r, Exception) for r in results), results
        else:
            for i in range(n):
                train(cfg, folder, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=Path(tmp) / str(i), seed=i)
        wall = time.perf_counter() - t
    return {"wall_s": wall, "peak_gb": peak_gb(device), "steps_per_s": n * steps / wall}


def run_side(kind: str, a: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, "-m", "bench.pool", "--side", kind, "--jobs", str(a.jobs), "--steps", str(a.steps)]
    cmd += ["--model", a.model, "--device", a.device, "--together", a.together]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--model", default="SmolLM2-135M-Instruct")
    p.add_argument("--device", default="cpu")
    p.add_argument("--together", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--side", choices=["pooled", "sequential", "one"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.side:
        together = {"auto": None, "on": True, "off": False}[a.together]
        print(json.dumps(side(a.side, a.jobs, a.steps, a.model, a.device, together)))
        return
    got = {kind: run_side(kind, a) for kind in ("one", "sequential", "pooled")}
    print(f"{a.jobs} jobs × {a.steps} steps of {a.model} on {a.device} ({CONFIG}), together: {a.together}")
    for kind, r in got.items():
        print(f"  {kind:<10} wall {r['wall_s']:7.1f} s   peak {r['peak_gb']:6.2f} GB   {r['steps_per_s']:.3f} steps/s")
    print(
        f"  pooled wall / sequential wall: {got['pooled']['wall_s'] / got['sequential']['wall_s']:.2f} (target ≤ 0.6)"
    )
    print(f"  pooled peak / one job's peak:  {got['pooled']['peak_gb'] / got['one']['peak_gb']:.2f} (target ≤ 1.5)")
    ratio = got["pooled"]["steps_per_s"] / got["one"]["steps_per_s"]
    print(f"  pooled steps/s / one job's:    {ratio:.2f}")


if __name__ == "__main__":
    main()
