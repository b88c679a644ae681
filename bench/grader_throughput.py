"""Python-grader throughput: the real sandbox (persistent worker, batched) against calling the grader in-process.

    .venv/bin/python -m bench.grader_throughput [--tier auto] [--calls 65536] [--demo-steps 2]

Prints calls/s of a trivial ``grade(sample, item)`` in-process and through a PythonRunner with batches of 64
and 256 (the ratio against in-process), the same with 2000-character completions (the JSON cost), and the
sandbox start-up time (spawn until the first batch of one is scored), then the share of a real training step
spent scoring on the demo job (SmolLM2-135M, 4 prompts x 8 samples x 24 tokens, the demo's python grader in the
sandbox). Targets from issue 4: >= 50,000 calls/s batched, <= 2% of a step. Same process, best of 3 rounds.
"""

from __future__ import annotations

import argparse
import time

from grpo_core.rewards.python_runner import PythonRunner, SandboxLimits

SOURCE = "def grade(sample, item):\n    return float(sample['output_text'] == item['answer'])\n"


def make_data(n: int, chars: int = 1) -> tuple[list[dict], list[dict]]:
    samples = [{"output_text": str(i % 10) * chars, "output_json": None} for i in range(n)]
    items = [{"answer": str(i % 7), "prompt": "What is 3 + 4?"} for i in range(n)]
    return samples, items


def in_process(calls: int) -> float:
    """The same function and the same finite-float check, with no sandbox and no serialisation."""
    namespace: dict = {}
    exec(compile(SOURCE, "grader.py", "exec"), namespace)
    grade = namespace["grade"]
    samples, items = make_data(calls)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        out = []
        for s, i in zip(samples, items, strict=True):
            v = grade(s, i)
            out.append({"score": float(v), "error": None})
        best = min(best, time.perf_counter() - t)
    return calls / best


def sandboxed(runner: PythonRunner, calls: int, batch: int, chars: int = 1) -> float:
    samples, items = make_data(batch, chars)
    rounds = max(1, calls // batch)
    runner.score(samples, items)  # warm-up
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(rounds):
            runner.score(samples, items)
        best = min(best, time.perf_counter() - t)
    return rounds * batch / best


def startup(tier: str, reps: int = 5) -> tuple[float, float]:
    """(median, max) seconds from PythonRunner() to the first scored batch of one item."""
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        with PythonRunner(SOURCE, tier=tier) as runner:
            runner.score(*make_data(1))
            times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[-1]


def demo_step_share(steps: int, tier: str) -> tuple[float, float]:
    """(mean scoring seconds, mean step seconds) over ``steps`` GRPO steps of the demo job's configuration."""
    import tempfile
    from pathlib import Path
    from typing import Any

    from grpo_core.models.catalog import prepare_smollm2
    from grpo_core.rewards.base import GraderEnv
    from grpo_core.rewards.graders import build_grader
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.schemas.graders import PythonGrader
    from grpo_core.trainer import train
    from scripts.demo import GRADER_SOURCE, MODELS, make_rows

    class Keep:
        def __init__(self) -> None:
            self.steps: list[Any] = []  # grpo_core.schemas.metrics.StepMetrics

        def on_message(self, message: str, level: str = "info") -> None: ...
        def on_start(self, execution: Any) -> None: ...
        def on_step(self, metrics: Any) -> None:
            self.steps.append(metrics)

        def on_checkpoint(self, *args: Any, **kwargs: Any) -> None: ...
        def should_stop(self) -> bool:
            return False

    import random

    cfg = GRPOConfig(
        group_size=8,
        batch_size=4,
        max_steps=steps,
        learning_rate=5e-4,
        beta=0.0,
        max_completion_tokens=24,
        micro_batch_size=32,
    )
    grader = build_grader(PythonGrader(source=GRADER_SOURCE, name="first_number"), GraderEnv(sandbox_tier=tier))
    rec = Keep()
    with tempfile.TemporaryDirectory() as work:
        train(
            cfg, prepare_smollm2(MODELS), make_rows(random.Random(0), 64), [grader], callbacks=rec, work_dir=Path(work)
        )
    grader.close()
    scoring = sum(m.timing.step.scoring for m in rec.steps) / len(rec.steps)
    full = sum(m.timing.step.full_iteration for m in rec.steps) / len(rec.steps)
    return scoring, full


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tier", default="auto")
    ap.add_argument("--calls", type=int, default=65536)
    ap.add_argument("--demo-steps", type=int, default=2, help="training steps for the share of a step (0: skip)")
    args = ap.parse_args()
    base = in_process(args.calls)
    print(f"in-process:            {base:>12,.0f} calls/s")
    # One runner for all batch sizes; recycling off so the numbers are the steady state.
    with PythonRunner(SOURCE, tier=args.tier, limits=SandboxLimits(recycle_after_batches=10**9)) as runner:
        for batch in (64, 256):
            rate = sandboxed(runner, args.calls, batch)
            ratio = base / rate
            print(
                f"sandbox {runner.tier}, batch {batch:>3}: {rate:>12,.0f} calls/s  (in-process/sandbox = {ratio:.1f}x)"
            )
        rate = sandboxed(runner, args.calls // 4, 256, chars=2000)
        print(f"sandbox {runner.tier}, batch 256, 2000-char completions: {rate:>10,.0f} calls/s")
    median, worst = startup(args.tier)
    print(f"sandbox start-up (spawn -> first batch scored): median {median * 1000:.0f} ms, max {worst * 1000:.0f} ms")
    if args.demo_steps:
        scoring, full = demo_step_share(args.demo_steps, args.tier)
        print(f"demo job: scoring {scoring * 1000:.1f} ms of a {full:.2f} s step = {scoring / full:.2%} of the step")


if __name__ == "__main__":
    main()
