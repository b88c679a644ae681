"""The update phase alone, on identical rollouts, with each of its optimizations switched off in turn.

    .venv/bin/python -m bench.update_ab [--rollouts 4] [--repeats 2] [--precision bf16]

Why a second harness: in bench/grpo_vs_trl.py every side samples its own rollouts, which diverge after the first
update, so step times there carry the spread of completion lengths (±5 % between steps) and cannot resolve an
optimization worth a few percent of a step. Here one policy samples ``--rollouts`` rollouts (SmolLM2, one prompt ×
8, ≤ 64 tokens, as the default bench config) and ``policy_update`` (β = 0.04: reference pass + policy
forward/backward) runs on each of them under every variant, interleaved, so all variants see the same tokens:

- ``all``: as the trainer runs (fused LoRA layers, SDPA math kernels on CPU, shared prompt prefix);
- ``-fused``: peft's own LoRA forward (grpo_core.update.lora_fused off);
- ``-math_attention``: the default SDPA kernels (grpo_core.update.step.attention_kernels off);
- ``-prefix``: every row runs its own prompt (grpo_core.update.logprobs.shared_prefixes off).

The gradient is the same in every variant (tests/unit/test_speedups.py); only the time differs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch

RESULTS = Path("bench/results")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="bf16")
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    import grpo_core.update.logprobs as lp
    import grpo_core.update.step as update
    from bench.shared import MODELS, bench_rows
    from grpo_core.data.rows import prompt_text
    from grpo_core.models.catalog import prepare_smollm2
    from grpo_core.policy import load_policy
    from grpo_core.rollout.engines.base import Sampling
    from grpo_core.rollout.engines.merged import MergedEngine
    from grpo_core.schemas.config import GRPOConfig

    model_dir = prepare_smollm2(MODELS)
    cfg = GRPOConfig(precision=a.precision, beta=0.04, group_size=8, micro_batch_size=8, max_completion_tokens=64)
    autocast = torch.bfloat16 if a.precision == "bf16" else None
    fused, tok = load_policy(model_dir, cfg, 0)
    plain, _ = load_policy(model_dir, cfg, 0, fused_lora=False)
    engine = MergedEngine(fused, tok, autocast or torch.float32)
    kernels, prefixes = update.attention_kernels, lp.shared_prefixes
    variants: dict[str, tuple[Any, Any, Any]] = {
        "all": (fused, kernels, prefixes),
        "-fused": (plain, kernels, prefixes),
        "-math_attention": (fused, lambda device: contextlib.nullcontext(), prefixes),
        "-prefix": (fused, kernels, lambda *args, **kw: None),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    rows = bench_rows(0)
    for i in range(a.rollouts):
        ro = engine.generate([prompt_text(rows[i], tok)], Sampling(8, 64, temperature=1.0, top_p=1.0, seed=i))
        adv = torch.randn(8, generator=torch.Generator().manual_seed(i))
        for _ in range(a.repeats):
            for name, (model, kern, pref) in variants.items():
                update.attention_kernels, lp.shared_prefixes = kern, pref
                t = time.perf_counter()
                update.policy_update(model, ro, adv, cfg, autocast)
                times[name].append(time.perf_counter() - t)
                model.zero_grad(set_to_none=True)
    update.attention_kernels, lp.shared_prefixes = kernels, prefixes
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"policy_update on {a.rollouts} identical rollouts x {a.repeats} ({a.precision}), median seconds:")
    for name, m in med.items():
        extra = "" if name == "all" else f"   -> switching it off costs {m / med['all'] - 1:+.1%}"
        print(f"  {name:16s} {m:.3f}{extra}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"update_ab-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"config": vars(a), "times": times, "median": med}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
