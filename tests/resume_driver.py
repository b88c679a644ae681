"""Run a short training in its own process, for the exact-resume test: ``python -m tests.resume_driver ARGS``.

Writes a JSON file with every step's metrics (wall-clock fields removed) and the checkpoints saved, so the test
can compare an uninterrupted run with one that stopped, exited, and resumed in a fresh interpreter.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.training import ROWS, DigitShare, Recorder, StartsWithDigit

# Everything that carries state across steps is switched on: μ = 2 (old log-probs, clipping), β > 0, a warmup +
# cosine schedule, dynamic sampling (the data cursor runs ahead of the step count), two weighted graders.
CONFIG = {
    "group_size": 4,
    "batch_size": 2,
    "max_steps": 6,
    "max_completion_tokens": 6,
    "learning_rate": 0.01,
    "beta": 0.04,
    "num_iterations": 2,
    "lr_scheduler": "cosine",
    "warmup_ratio": 0.2,
    "dynamic_sampling": True,
    "dynamic_sampling_max_rounds": 4,
    "reward_weights": [1.0, 0.5],
    "checkpoint_interval": 3,
    "micro_batch_size": 3,
}
# measurements of the process, not results of the run: the clock, and the memory it peaked at (on a CPU the
# allocator's high-water mark, which differs between processes by a few MB); the memory's device stays
# (tests/gpu/test_gpu_training.py)
WALL_CLOCK = {"timing": True, "tokens_per_second": True, "memory": {"peak_allocated_gb": True}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--stop-after", type=int, default=None)
    ap.add_argument("--resume-from", type=Path, default=None)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--deterministic", action="store_true", help="deterministic CUDA kernels (tests/gpu)")
    args = ap.parse_args()
    if args.deterministic:
        import torch

        torch.use_deterministic_algorithms(True)
    rec = Recorder(stop_after=args.stop_after)
    result = train(
        GRPOConfig.model_validate({**CONFIG, "device": args.device}),
        args.model,
        ROWS,
        [StartsWithDigit(), DigitShare()],
        callbacks=rec,
        work_dir=args.work,
        seed=7,
        resume_from=args.resume_from,
    )
    steps = [m.model_dump(mode="json", exclude=WALL_CLOCK) for m in rec.steps]
    ckpts = [{"step": s, "path": str(p), "final": f} for s, p, f in rec.ckpts]
    ex = rec.execution
    where = None if ex is None else {"device": ex.device, "precision": ex.precision, "why": ex.precision_reason}
    out = {"steps": steps, "checkpoints": ckpts, "steps_done": result.steps_done, "execution": where}
    args.out.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
