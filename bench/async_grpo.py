"""Synchronous against asynchronous GRPO (``max_staleness`` 0, 1, 2), side by side in one run, on bench.learning's task.

    .venv/bin/python -m bench.async_grpo [--steps 16] [--seeds 0 1] [--staleness 0 1 2]

Every side is our trainer with bench.learning's settings (G = 8, 2 prompts per step, ≤ 32 completion tokens, β 0.04,
LoRA r = 16, the default learning rate) and the same seed; only ``max_staleness`` differs. Each side runs in its own
spawned process, one after the other, so they share nothing but the machine. The synchronous side trains ``--steps``
steps; its training time (the first step's start to the last step's end) is the budget. An asynchronous side trains
until it has done ``--steps`` steps *and* used the budget, so one run gives its adapter at equal steps and at equal
wall clock (the end of the first step past the budget).

Printed per side: mean step time over the ``--steps`` steps, its ratio to the synchronous side, and the mean without
the first step (which fills the pipeline); completion tokens per second; the trainer's idle share (waiting for a
batch, or sampling in turn, / wall); the sampler's idle share (1 − its sampling time / wall); the mean mismatch KL
and the largest staleness; and the validation reward (greedy, 48 held-out prompts) at equal steps and at equal wall
clock. On a GPU the sides run there (the device resolves as a job's would). Results go to
bench/results/async-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.format_task import FormatGrader, split
from bench.learning import MODELS, RESULTS, SETTINGS, run, validation_reward

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def side(a: argparse.Namespace, seed: int, k: int, budget_s: float | None, out: str, q: Any) -> None:
    """Our trainer at ``max_staleness`` k; adapters at ``out``/steps and ``out``/budget; its log to ``q``."""
    import torch

    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.trainer import train

    torch.set_num_threads(os.cpu_count() or 1)
    steps = a.steps if budget_s is None else a.steps * 4  # an async side runs on until the budget is used
    cfg = GRPOConfig(**SETTINGS, max_steps=steps, micro_batch_size=16, max_staleness=k, checkpoint_interval=1)
    log: dict[str, Any] = {
        "k": k,
        "step_end_s": [],
        "waiting_s": [],
        "sampling_s": [],
        "tokens": [],
        "mismatch_kl": [],
        "lags": [],
    }
    saved: set[str] = set()

    class Callbacks:
        t0 = 0.0

        def on_message(self, message: str, level: str = "info") -> None:
            if level != "info":
                print(f"  k={k} {level}: {message}")

        def on_start(self, execution: Any) -> None:
            log["execution"] = execution.message()

        def on_step(self, m: Any) -> None:
            log["step_end_s"].append(time.perf_counter() - self.t0)
            log["waiting_s"].append(m.timing.step.waiting or 0.0)
            log["sampling_s"].append(m.timing.step.sampling)
            log["tokens"].append(m.tokens)
            if m.off_policy is not None:
                log["mismatch_kl"].append(m.off_policy.mismatch_kl)
                log["lags"].append(max(int(x) for x in m.off_policy.staleness))
            print(f"  k={k} step {m.step}: {log['step_end_s'][-1]:.1f}s, train reward {m.scores.train_reward_mean:.3f}")

        def on_checkpoint(self, step: int, path: Path, *args: Any, **kwargs: Any) -> None:
            keep = shutil.ignore_patterns("trainer_state.pt")
            if step == a.steps and "steps" not in saved:
                shutil.copytree(path, f"{out}/steps", ignore=keep)
                saved.add("steps")
            over = step >= a.steps if budget_s is None else log["step_end_s"][-1] >= budget_s
            if over and "budget" not in saved:
                shutil.copytree(path, f"{out}/budget", ignore=keep)
                saved.add("budget")
                log["budget_step"] = step

        def should_stop(self) -> bool:
            if not self.t0:
                self.t0 = time.perf_counter()  # the first step starts now: the model load is not counted
            return {"steps", "budget"} <= saved

    train_rows, _ = split()
    with tempfile.TemporaryDirectory() as work:
        t = time.perf_counter()
        train(cfg, Path(a.model_path), train_rows, [FormatGrader()], callbacks=Callbacks(), work_dir=Path(work),
              seed=seed)  # fmt: skip
        log["run_s"] = time.perf_counter() - t
    q.put(log)


def summary(log: dict[str, Any], steps: int) -> dict[str, float]:
    """Speed over the first ``steps`` steps of a side's log."""
    wall = log["step_end_s"][steps - 1]
    return {
        "step_s": wall / steps,
        # without the first step, which fills the pipeline (its batch is sampled with nothing to overlap)
        "steady_step_s": (wall - log["step_end_s"][0]) / max(steps - 1, 1),
        "tokens_per_s": sum(log["tokens"][:steps]) / wall,
        # the synchronous trainer idles while it samples; an asynchronous one while it waits for a batch
        "trainer_idle": sum(log["waiting_s"][:steps] if log["k"] else log["sampling_s"][:steps]) / wall,
        "sampler_idle": 1 - sum(log["sampling_s"][:steps]) / wall,
        "mismatch_kl": statistics.mean(log["mismatch_kl"][:steps]) if log["mismatch_kl"] else 0.0,
        "max_lag": max(log["lags"][:steps], default=0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--staleness", type=int, nargs="+", default=[0, 1, 2])
    a = ap.parse_args()
    from grpo_core.models.catalog import prepare_smollm2

    a.model_path = str(prepare_smollm2(MODELS).resolve())
    started = time.perf_counter()
    result: dict[str, Any] = {"config": vars(a) | {"settings": SETTINGS, "cpus": os.cpu_count()}, "runs": {}}
    base = validation_reward(a.model_path, None)
    result["base_validation_reward"] = base
    print(f"base model: validation reward {base:.3f} (greedy, 48 held-out prompts)")
    work = Path(tempfile.mkdtemp(prefix="bench-async-"))
    for seed in a.seeds:
        rows: dict[str, Any] = {}
        budget: float | None = None
        for k in sorted(a.staleness):
            out = str(work / f"k{k}-{seed}")
            log = run(side, a, seed, k, None if k == 0 else budget, out)
            if k == 0:
                budget = log["step_end_s"][a.steps - 1]
            log |= summary(log, a.steps)
            log["valid_at_steps"] = validation_reward(a.model_path, f"{out}/steps")
            log["valid_at_budget"] = validation_reward(a.model_path, f"{out}/budget")
            rows[f"k{k}"] = log
        sync = rows.get("k0")
        for name, r in rows.items():
            ratio = r["step_s"] / sync["step_s"] if sync else float("nan")
            print(
                f"seed {seed} {name}: {r['step_s']:.2f} s/step ({ratio:.2f}x sync; {r['steady_step_s']:.2f} after the "
                f"first step), {r['tokens_per_s']:.0f} tok/s, "
                f"trainer idle {r['trainer_idle']:.0%}, sampler idle {r['sampler_idle']:.0%}, "
                f"mismatch KL {r['mismatch_kl']:.2e}, max lag {r['max_lag']}; "
                f"validation {r['valid_at_steps']:.3f} at {a.steps} steps, {r['valid_at_budget']:.3f} at the "
                f"budget (step {r.get('budget_step', a.steps)})"
            )
        result["runs"][f"seed{seed}"] = rows
    means: dict[str, dict[str, float]] = {}
    for k in sorted(a.staleness):
        runs = [r[f"k{k}"] for r in result["runs"].values()]
        means[f"k{k}"] = {
            f: statistics.mean(r[f] for r in runs)
            for f in ("step_s", "steady_step_s", "tokens_per_s", "valid_at_steps", "valid_at_budget")
        }
    result["means"] = means
    for name, m in means.items():
        ratio = m["step_s"] / means["k0"]["step_s"] if "k0" in means else float("nan")
        print(
            f"mean over seeds {name}: {m['step_s']:.2f} s/step ({ratio:.2f}x sync; {m['steady_step_s']:.2f} after the "
            f"first step), {m['tokens_per_s']:.0f} tok/s, "
            f"validation {m['valid_at_steps']:.3f} at equal steps, {m['valid_at_budget']:.3f} at equal wall clock "
            f"(base {base:.3f})"
        )
    shutil.rmtree(work, ignore_errors=True)
    result["wall_s"] = time.perf_counter() - started
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"async-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path} ({result['wall_s']:.0f}s)")


if __name__ == "__main__":
    main()
