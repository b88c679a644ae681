"""TRL's side of bench/grpo_vs_trl.py: trl.GRPOTrainer in its own process, gated per step like ours
(bench/sides.py); what both sides use is in bench/shared.py.

Variants (bench.sides.side_target): ``trl`` (the main comparison: in ours' precision, i.e. a bf16 model and
``bf16=True`` where ours trains in bf16, on a GPU that has it or a CPU with fast bf16 matmuls, fp32 otherwise),
``trl_fp32`` / ``trl_bf16`` (the other precision, the second row), ``trl_gc`` (TRL's default gradient
checkpointing on) and
``trl_vllm`` (CUDA only: ``use_vllm=True, vllm_mode="colocate"``, vLLM inside this process on the same GPU, with
``--vllm-gpu-memory-utilization`` of it, as our vLLM side).
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import warnings
from typing import Any

from bench.shared import bench_rows, device_stats, maxrss_mb, reward_last_number, side_model_dir, step_end


class _Stop(Exception):
    pass


def worker_trl(
    conn: Any,
    a: argparse.Namespace,
    gradient_checkpointing: bool = False,
    precision: str | None = None,
    vllm: bool = False,
) -> None:
    """trl.GRPOTrainer.train, gated per step through a TrainerCallback; generate and rewards wrapped with timers."""
    model_dir = side_model_dir(a)
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback

    if not vllm:
        warnings.filterwarnings("ignore", message="TRL currently supports vLLM")  # installed but unused here
    from trl import GRPOConfig, GRPOTrainer

    from grpo_core.data.rows import prompt_text

    cuda = a.device == "cuda"
    # The fair comparison is TRL in the precision ours runs (the parent resolved it into a.precision): bf16 on a GPU
    # that has it and on a CPU whose bf16 matmul is fast, fp32 on a CPU without bf16 hardware, where bf16 is
    # emulated and slower. ``precision`` forces the other one (the second row).
    bf16 = (precision or a.precision) == "bf16" and (not cuda or torch.cuda.is_bf16_supported())
    tok = AutoTokenizer.from_pretrained(model_dir)
    # The exact prompt strings our trainer feeds (chat template applied), so both sides see the same tokens.
    ds = Dataset.from_list([{"prompt": prompt_text(r, tok), "answer": r["answer"]} for r in bench_rows(a.seed)])
    n = a.group_size * a.prompts
    out_dir = tempfile.mkdtemp(prefix="bench-trl-")
    engine: dict[str, Any] = {"use_vllm": False}
    if vllm:
        engine = {
            "use_vllm": True,
            "vllm_mode": "colocate",
            "vllm_gpu_memory_utilization": a.vllm_gpu_memory_utilization,
            "vllm_max_model_length": 1024 + a.max_tokens,  # our max_prompt_tokens default + the completion
        }
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
        gradient_checkpointing=gradient_checkpointing,
        bf16=bf16,
        fp16=False,
        use_cpu=not cuda,  # on a GPU machine the Trainer takes cuda:0 (CUDA_VISIBLE_DEVICES picks which GPU)
        seed=a.seed,
        max_steps=10_000,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        **engine,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if bf16 else torch.float32)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    phases: dict[str, float] = {}
    counts: dict[str, int] = {}

    class Gate(TrainerCallback):
        t0 = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if conn.recv() == "stop":
                raise _Stop
            phases.clear()
            counts.clear()
            if cuda:
                torch.cuda.reset_peak_memory_stats()  # the step's own peak, as our trainer resets it per step
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            wall = step_end(a.device) - self.t0
            ph = {k: phases.get(k, 0.0) for k in ("sampling", "scoring")}
            ph["update"] = wall - ph["sampling"] - ph["scoring"]
            reward = (trainer._metrics["train"].get("reward") or [None])[-1]
            conn.send(
                {
                    "wall": wall,
                    "phases": ph,
                    "completion_tokens": counts.get("completion", 0),
                    "reward": reward,
                    # TRL's update runs every row's whole prompt + completion (no shared prefix); padding excluded
                    "update_tokens": float(counts.get("prompt", 0) + counts.get("completion", 0)),
                    "params": params,
                    **device_stats(a.device),
                }
            )

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
    params = float(sum(p.numel() for p in trainer.model.parameters()))  # frozen + LoRA, tied head once
    gen, rew = trainer._generate_single_turn, trainer._calculate_rewards

    def timed_gen(prompt_ids: list[list[int]], *args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = gen(prompt_ids, *args, **kw)  # (completion_ids, logprobs); with vLLM its weight sync included
        phases["sampling"] = phases.get("sampling", 0.0) + time.perf_counter() - t
        counts["completion"] = counts.get("completion", 0) + sum(len(c) for c in out[0])
        counts["prompt"] = counts.get("prompt", 0) + sum(len(p) for p in prompt_ids)
        return out

    def timed_rew(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = rew(*args, **kw)
        phases["scoring"] = phases.get("scoring", 0.0) + time.perf_counter() - t
        return out

    trainer._generate_single_turn, trainer._calculate_rewards = timed_gen, timed_rew
    execution = {
        "device": str(trainer.args.device),
        "precision": "bf16" if bf16 else "fp32",
        "gradient_checkpointing": gradient_checkpointing,
        "rollout_engine": "vllm colocate" if vllm else "transformers generate()",
        "vllm_gpu_memory_utilization": a.vllm_gpu_memory_utilization if vllm else None,
    }
    conn.send({"ready": True, "execution": execution})
    with contextlib.suppress(_Stop):  # the parent's "stop" ends train() from inside the gate
        trainer.train()
    conn.send({"done": True, "maxrss_mb": maxrss_mb()})
