"""Sampling alone: one step's rollout (one prompt × 8, 64 tokens) with each sampler the trainer can use.

    .venv/bin/python -m bench.sampler [--repeats 3]

Why: the GRPO step is half sampling, and the sampler's pieces (merged weights, bf16, oneDNN-prepacked linears)
each cost or save a fraction of a second that step-level runs (bench/grpo_vs_trl.py) cannot resolve. Every
variant samples the same prompt with the same seed from the same policy (SmolLM2-135M-Instruct with a LoRA
adapter made non-trivial), best of ``--repeats``:

- ``peft generate``: the trainer's PEFT model through ``generate()`` (the ``transformers`` engine);
- ``merged fp32`` / ``merged bf16``: grpo_core.rollout.engines.merged with our decode loop;
- ``merged bf16, not prepacked``: the same with plain bf16 ``nn.Linear`` weights.

Also prints how far the sampler's recorded log-probs are from the trainer's (what the TIS correction absorbs).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    import grpo_core.rollout.engines.merged as merged
    from bench.shared import MODELS, bench_rows
    from grpo_core.data.rows import prompt_text
    from grpo_core.models.catalog import prepare_smollm2
    from grpo_core.policy import load_policy
    from grpo_core.rollout.engines.base import Sampling
    from grpo_core.rollout.engines.hf import sample
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.update.logprobs import completion_logprobs

    model_dir = prepare_smollm2(MODELS)
    model, tok = load_policy(model_dir, GRPOConfig(), seed=0)
    with torch.no_grad():  # an adapter that changes the outputs, as after some training
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.002, generator=torch.Generator().manual_seed(0))
    prompts = [prompt_text(bench_rows(0)[0], tok)]
    kw = Sampling(group_size=8, max_new_tokens=64, temperature=1.0, top_p=1.0, seed=0)

    def best(fn: Any) -> tuple[float, Any]:
        times, out = [], None
        for _ in range(a.repeats):
            t = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t)
        return min(times), out

    rows: list[tuple[str, float, Any]] = []
    rows.append(("peft generate (fp32)", *best(lambda: sample(model, tok, prompts, kw))))
    for label, dtype, prepack in (
        ("merged fp32", torch.float32, True),
        ("merged bf16", torch.bfloat16, True),
        ("merged bf16, not prepacked", torch.bfloat16, False),
    ):
        engine = merged.MergedEngine(model, tok, dtype, prepack=prepack)
        t = time.perf_counter()
        engine.sync(model, 1)
        sync_s = time.perf_counter() - t
        seconds, ro = best(lambda e=engine: e.generate(prompts, kw))
        rows.append((f"{label} (sync {sync_s:.2f} s)", seconds, ro))
    print(f"one rollout: 1 prompt x 8 x <= 64 tokens, best of {a.repeats}, {torch.get_num_threads()} threads")
    for label, seconds, ro in rows:
        steps = ro.completion_ids.shape[1]
        line = f"  {label:40s} {seconds:6.2f} s  ({steps} decode steps, {seconds / steps * 1000:.0f} ms each)"
        if ro.sampling_logp is not None:
            with torch.no_grad():
                want = completion_logprobs(
                    model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, temperature=1.0
                )
            diff = (want - ro.sampling_logp)[ro.completion_mask.bool()].abs()
            line += f"  |log-prob vs trainer| mean {float(diff.mean()):.1e} max {float(diff.max()):.1e}"
        print(line)


if __name__ == "__main__":
    main()
