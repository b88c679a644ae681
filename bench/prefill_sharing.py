"""Sampling G completions per prompt with and without the shared prompt prefill, on the demo model.

    .venv/bin/python -m bench.prefill_sharing [--group-size 8] [--prompts 4] [--tokens 24]

Same process, same prompts, same seed; prints seconds per call (best of 3) for both paths and their ratio, and
checks the greedy outputs are identical. The demo model is prepared into .state/models the first time.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from grpo_core.data.rows import prompt_text
from grpo_core.models.catalog import prepare_smollm2
from grpo_core.policy import load_policy
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.hf import sample
from grpo_core.schemas.config import GRPOConfig

QUESTIONS = [
    "What is 17 + 25? Answer with the number only.",
    "A train travels 60 km in 1.5 hours. What is its average speed in km/h? Answer with the number.",
    "Name the capital city of the country whose flag is red with a white cross, in one word.",
    "If x = 3 and y = 4, what is x squared plus y squared? Give only the number.",
]


def timed(fn, reps: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=24)
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    model_dir = prepare_smollm2(Path(".state/models"))
    model, tok = load_policy(model_dir, GRPOConfig(), seed=0)
    prompts = [prompt_text({"prompt": q}, tok) for q in (QUESTIONS * 4)[: args.prompts]]
    kw = {"group_size": args.group_size, "max_new_tokens": args.tokens, "top_p": 1.0, "seed": 0}
    same = torch.equal(
        sample(model, tok, prompts, Sampling(temperature=0.0, **kw), share_prefill=True).completion_ids,
        sample(model, tok, prompts, Sampling(temperature=0.0, **kw), share_prefill=False).completion_ids,
    )
    plain = timed(lambda: sample(model, tok, prompts, Sampling(temperature=1.0, **kw), share_prefill=False))
    shared = timed(lambda: sample(model, tok, prompts, Sampling(temperature=1.0, **kw), share_prefill=True))
    n_tok = len(tok(prompts[0], add_special_tokens=False)["input_ids"])
    print(f"{args.prompts} prompts (~{n_tok} tokens) x G={args.group_size}, {args.tokens} new tokens")
    print(f"plain {plain:.2f}s, shared prefill {shared:.2f}s, speed-up x{plain / shared:.2f}; greedy identical: {same}")


if __name__ == "__main__":
    main()
