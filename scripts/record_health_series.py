"""Record the per-step metrics of a real GRPO run on the demo task, for the health monitors' tests
(tests/data/health/*.json): the monitors are checked on what real runs look like, not on made-up numbers.

    .venv/bin/python -m scripts.record_health_series NAME [--lr 5e-4] [--steps 20] [--temperature 1.0]

Same model, data, grader and settings as ``make demo`` (scripts/demo.py) unless changed here; trains in-process
with grpo_core's loop (no API, no worker), validation every 5 steps. Writes tests/data/health/NAME.json: the run's
settings and one StepMetrics (JSON) per step, rollouts left out.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from grpo_core.models.catalog import SMOLLM2_ID, prepare_smollm2
from grpo_core.rewards.graders import build_grader
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.graders import PythonGrader
from grpo_core.schemas.metrics import Execution, Level, StepMetrics
from grpo_core.trainer import train
from scripts.demo import GRADER_SOURCE, HYPERPARAMETERS, MODELS, split

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "health"


class Recorder:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def on_message(self, message: str, level: Level = "info") -> None:
        print(f"[{level}] {message}", flush=True)

    def on_start(self, execution: Execution) -> None:
        pass

    def on_step(self, metrics: StepMetrics) -> None:
        data = metrics.model_dump(mode="json")
        data["samples"] = []
        self.steps.append(data)
        print(metrics.message(), flush=True)

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        pass

    def should_stop(self) -> bool:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    train_rows, valid = split(0)
    settings = HYPERPARAMETERS | {
        "max_steps": args.steps,
        "learning_rate": args.lr,
        "temperature": args.temperature,
        "checkpoint_interval": 1000,  # the series is what is recorded, not the adapters
    }
    cfg = GRPOConfig.model_validate(settings)
    grader = build_grader(PythonGrader(source=GRADER_SOURCE, name="first_number"))
    recorder = Recorder()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        train(cfg, prepare_smollm2(MODELS), train_rows, [grader], callbacks=recorder, work_dir=Path(work),
              seed=args.seed, valid_rows=valid)  # fmt: skip
    OUT.mkdir(parents=True, exist_ok=True)
    record = {
        "run": f"scripts/record_health_series.py {args.name} --lr {args.lr} --steps {args.steps} "
        f"--temperature {args.temperature} --seed {args.seed}",
        "model": SMOLLM2_ID,
        "hyperparameters": settings,
        "seconds": round(time.monotonic() - started),
        "steps": recorder.steps,
    }
    (OUT / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT / args.name}.json")


if __name__ == "__main__":
    main()
