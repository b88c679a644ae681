"""An asynchronous (max_staleness > 0) training run in its own process, for the fault tests that kill it:
``python -m tests.async_driver ARGS``.

Appends one JSON line per event to ``--out`` as it happens (flushed): each step's prompts, staleness and the
sampler process's pid, and each checkpoint, so a test that SIGKILLs this process still reads what was done.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.metrics import StepMetrics
from grpo_core.trainer import train
from tests.training import ROWS, DigitShare, Recorder

CONFIG: dict[str, Any] = {
    "group_size": 4,
    "batch_size": 2,
    "max_steps": 5,
    "max_completion_tokens": 6,
    "learning_rate": 0.01,
    "checkpoint_interval": 1,
    "sample_log_count": 8,  # every sample: the test reads each step's prompts back
    "max_staleness": 1,
}


def sampler_pids() -> list[int]:
    """The pids of this process's sampler processes (grpo_core.sampler_process)."""
    me, out = str(os.getpid()), []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            parent = (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        if parent == me and b"grpo_core.sampler_process" in cmd:
            out.append(int(proc.name))
    return out


def prompts_of(m: StepMetrics, group_size: int) -> list[str]:
    """The step's prompts, one per group, in batch order."""
    return [str(s.prompt) for s in m.samples[::group_size]]


class Journal(Recorder):
    """``hold_at``: after journaling that checkpoint, wait (for the test's SIGKILL) instead of training on: a step
    of the tiny model takes milliseconds, and the run could otherwise finish between two looks of the test."""

    def __init__(self, out: Path, hold_at: int | None = None) -> None:
        super().__init__()
        self.out, self.hold_at = out, hold_at

    def _write(self, record: dict[str, Any]) -> None:
        with self.out.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def on_step(self, metrics: StepMetrics) -> None:
        super().on_step(metrics)
        lags = metrics.off_policy.staleness if metrics.off_policy is not None else {}
        record = {"step": metrics.step, "prompts": prompts_of(metrics, CONFIG["group_size"]), "staleness": lags}
        self._write(record | {"sampler_pids": sampler_pids()})

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        super().on_checkpoint(step, path, metrics, final=final, best=best)
        self._write({"checkpoint": step, "path": str(path)})
        if step == self.hold_at:
            time.sleep(600)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--resume-from", type=Path, default=None)
    ap.add_argument("--hold-at", type=int, default=None, help="wait to be killed after this step's checkpoint")
    args = ap.parse_args()
    train(
        GRPOConfig.model_validate(CONFIG),
        args.model,
        ROWS,
        [DigitShare()],
        callbacks=Journal(args.out, args.hold_at),
        work_dir=args.work,
        seed=5,
        resume_from=args.resume_from,
    )


if __name__ == "__main__":
    main()
