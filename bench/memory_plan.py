"""The memory plan of a job on one GPU, per model, computed on a CPU (issue 44: does 8B fit on one 80 GB GPU?).

    .venv/bin/python -m bench.memory_plan [--models qwen2.5-0.5b,...] [--gpu-gb 79.1] [--json PATH]

For each published shape of bench/real_models.py at full size (parameters counted on the meta device: no memory, no
weights), at the real-model bench's workload (2 prompts × 8 × 256 tokens) and at a real one (8 prompts × 8 × 1024
tokens), with the default adapter (LoRA r = 16, all-linear) in bf16: grpo_core.hardware.memory.memory_plan's parts,
whether ``gradient_checkpointing: auto`` turns checkpointing on there (``checkpointing_needed``, the merged sampler
beside the update), and the update's and the sampler's peaks against the GPU. The micro-batch is the step's tokens
up to ``max_tokens_per_micro_batch: auto``'s budget (what 70 % of the memory left holds). What a GPU run measures
goes beside these figures (bench.real_models prints the update's measured peak): the plan is the claim it checks.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.real_models import SHAPES

WORKLOADS = {"bench": (2, 8, 256), "real": (8, 8, 1024)}  # prompts, group size, completion tokens
PROMPT_TOKENS = 64
GIB = 2**30


def _counts(config: Any) -> tuple[int, int, int]:
    """(all parameters, those of the layers the adapter wraps, the adapter's) of ``config`` with LoRA r = 16 on
    every linear layer of the decoder, counted on the meta device."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    linears = [m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "lm_head" not in n]
    adapted = sum(m.weight.numel() for m in linears)
    lora = sum(16 * (m.in_features + m.out_features) for m in linears)
    return total, adapted, lora


class _Config:
    """What grpo_core.hardware.memory reads of a model: its ``config``."""

    def __init__(self, config: Any) -> None:
        self.config = config


def plan(name: str, workload: str, gpu_gb: float) -> dict[str, Any]:
    """One shape's plan at one workload on a GPU of ``gpu_gb``."""
    from transformers import AutoConfig

    from grpo_core.hardware.device import Placement
    from grpo_core.hardware.memory import auto_micro_batch_tokens, checkpointing_needed, memory_plan
    from grpo_core.schemas.config import GRPOConfig

    c = {k: v for k, v in SHAPES[name].config.items() if k not in ("architectures", "torch_dtype")}
    config = AutoConfig.for_model(c.pop("model_type"), **c)
    params, adapted, lora = _counts(config)
    prompts, group, completion = WORKLOADS[workload]
    cfg = GRPOConfig(batch_size=prompts, group_size=group, max_completion_tokens=completion,
                     max_prompt_tokens=PROMPT_TOKENS, precision="bf16")  # fmt: skip
    model = _Config(config)
    free = gpu_gb - params * 2 / GIB - adapted * 2 / GIB  # after the weights and the sampler's copy are loaded
    gpu = Placement(__import__("torch").device("cuda", 0), "bf16", "planned GPU", 0, "plan", total_gb=gpu_gb)
    import grpo_core.hardware.memory as memory

    memory.device_memory_gb = lambda device: (free, gpu_gb)  # the plan's GPU, not this machine's
    checkpointing = checkpointing_needed(model, cfg, gpu, engine_share=0.0, fused_head=True)
    budget = auto_micro_batch_tokens(model, cfg, gpu, checkpointing=checkpointing, fused_head=True)
    tokens = min(prompts * (PROMPT_TOKENS + group * completion), budget)  # the step's tokens, auto's budget at most
    parts = memory_plan(
        model, params=params, adapted_params=adapted, lora_params=lora, rows=prompts * group,
        sequence_tokens=PROMPT_TOKENS + completion, tokens=tokens, checkpointing=checkpointing,
    )  # fmt: skip
    return {
        "model": name,
        "workload": f"{prompts}x{group}x{completion}",
        "params": params,
        "checkpointing": checkpointing,
        "micro_batch_tokens": tokens,
        "parts_gib": {k: round(v / GIB, 2) for k, v in vars(parts).items()},
        "update_peak_gib": round(parts.update_peak / GIB, 1),
        "sampling_peak_gib": round(parts.sampling_peak / GIB, 1),
        "fits": max(parts.update_peak, parts.sampling_peak) <= 0.9 * gpu_gb * GIB,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(SHAPES))
    p.add_argument("--gpu-gb", type=float, default=79.1, help="the GPU's memory (an H100 80 GB shows 79.1 GiB)")
    p.add_argument("--json", type=Path, help="also write the rows here")
    a = p.parse_args(argv)
    rows = [plan(m, w, a.gpu_gb) for m in a.models.split(",") for w in WORKLOADS]
    print(f"memory plan on a {a.gpu_gb} GiB GPU, bf16, LoRA r=16 all-linear, merged sampler (GiB)")
    print("| model | workload | ckpt | weights | sampler copy | KV cache | activations | head | adapter+Adam "
          "| update peak | sampling peak | fits |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        g = r["parts_gib"]
        print(f"| {r['model']} | {r['workload']} | {'on' if r['checkpointing'] else 'off'} | {g['weights']} | "
              f"{g['sampler_weights']} | {g['kv_cache']} | {g['activations']} | {g['head']} | {g['adapter']} | "
              f"{r['update_peak_gib']} | {r['sampling_peak_gib']} | {'yes' if r['fits'] else 'NO'} |")  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
