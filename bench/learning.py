"""Learning per second: our trainer vs TRL's GRPOTrainer on a task the base model does badly at (issue 19, item 5).

    .venv/bin/python -m bench.learning [--steps 24] [--seeds 0 1] [--recipes default dapo ...] [--no-trl]

Why it measures what it measures:

* The task (bench/format_task.py) is a format-following one with a graded reward, not the demo's arithmetic:
  SmolLM2-135M-Instruct scores ~0.27 of 1 on the held-out prompts greedily before training.
* Both sides get the same model, training rows (as prompt strings with the chat template applied), reward, seed
  and settings: G=8, 2 prompts per step, <= 32 completion tokens, beta 0.04 (k3), epsilon 0.2, LoRA r=16/alpha=32
  on all linear layers, constant learning rate (our default unless --lr), temperature 1, max grad norm 1, TRL's
  loss "grpo" (= our seq_mean_token_mean), bf16 where ours picks it (TRL then gets a bf16 model and bf16=True),
  no gradient checkpointing, TRL's bias-corrected KL off (ours does not weight the KL by the ratio by default).
  The row order differs (each shuffles with its own sampler), which is why there are two seeds.
* Equal wall clock: ours trains --steps steps; its training time (first step's start to the last step's end, the
  model load excluded on both sides) is the budget; TRL's adapter is saved at the end of the first step that
  reaches that budget. Equal steps: TRL's adapter after --steps steps. So one run per side and seed gives all
  three adapters, and speed (reward per second) and learning per step (reward per step) are told apart.
* Validation reward: greedy, <= 32 tokens, the 48 held-out prompts, each adapter on the fp32 base model, the same
  function for every adapter (grpo_core.evaluation.validation.reward_sums).
* ``--recipes``: ours only, one seed, each named recipe at its own learning rate (the LoRA-scaled one,
  grpo_core.schemas.presets) and its algorithm settings, with the bench's step size (G=8, 2 prompts; a recipe's group
  and batch sizes are for GPUs) so that every recipe's default is shown to learn on this task.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.format_task import FormatGrader, split

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path("bench/results")
MODELS = Path(".state/models")
SETTINGS: dict[str, Any] = {
    "group_size": 8,
    "batch_size": 2,
    "max_completion_tokens": 32,
    "beta": 0.04,
    "epsilon": 0.2,
    "loss_aggregation": "seq_mean_token_mean",
    "temperature": 1.0,
    "lr_scheduler": "constant",
    "max_grad_norm": 1.0,
    "gradient_checkpointing": False,
}


def ours(a: argparse.Namespace, seed: int, out: str, recipe: str | None, q: Any) -> None:
    """Our trainer for ``a.steps`` steps; the final adapter to ``out``; per-step times and train rewards to ``q``."""
    import torch

    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.trainer import train

    torch.set_num_threads(os.cpu_count() or 1)
    settings = SETTINGS | {"max_steps": a.steps, "micro_batch_size": 16}
    if recipe not in (None, "default"):
        settings = {k: v for k, v in settings.items() if k not in ("beta", "epsilon", "loss_aggregation")}
        settings["recipe"] = recipe
    if a.lr is not None:
        settings["learning_rate"] = a.lr
    cfg = GRPOConfig(**settings)
    log: dict[str, Any] = {"step_end_s": [], "train_reward": [], "learning_rate": cfg.effective_learning_rate}

    class Callbacks:
        t0 = 0.0

        def on_message(self, message: str, level: str = "info") -> None:
            pass

        def on_start(self, execution: Any) -> None:
            log["precision"] = execution.precision

        def on_step(self, m: Any) -> None:
            log["step_end_s"].append(time.perf_counter() - self.t0)
            log["train_reward"].append(m.scores.train_reward_mean)
            print(f"  ours step {m.step}: {log['step_end_s'][-1]:.0f}s, train reward {m.scores.train_reward_mean:.3f}")

        def on_checkpoint(self, *args: Any, **kwargs: Any) -> None:
            pass

        def should_stop(self) -> bool:
            if not self.t0:
                self.t0 = time.perf_counter()  # the first step starts now: the model load is not counted
            return False

    train_rows, _ = split()
    with tempfile.TemporaryDirectory() as work:
        res = train(cfg, Path(a.model_path), train_rows, [FormatGrader()], callbacks=Callbacks(), work_dir=Path(work),
                    seed=seed)  # fmt: skip
        assert res.final_checkpoint is not None
        shutil.copytree(res.final_checkpoint, out, ignore=shutil.ignore_patterns("trainer_state.pt"))
    q.put(log)


def trl(a: argparse.Namespace, seed: int, out: str, budget_s: float, precision: str, q: Any) -> None:
    """TRL's GRPOTrainer for ``a.steps`` steps; adapters at the budget (``out``/budget) and at the end
    (``out``/steps)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from bench.format_task import reward_format
    from grpo_core.data.rows import prompt_text
    from grpo_core.schemas.config import GRPOConfig as Ours

    torch.set_num_threads(os.cpu_count() or 1)
    bf16 = precision == "bf16"
    lr = a.lr if a.lr is not None else Ours().learning_rate
    tok = AutoTokenizer.from_pretrained(a.model_path)
    train_rows, _ = split()
    ds = Dataset.from_list([{"prompt": prompt_text(r, tok), "count": r["count"]} for r in train_rows])
    n = SETTINGS["group_size"] * SETTINGS["batch_size"]
    extra = {"use_bias_correction_kl": False} if "use_bias_correction_kl" in GRPOConfig.__dataclass_fields__ else {}
    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="bench-trl-"), per_device_train_batch_size=n,
        gradient_accumulation_steps=1, num_generations=SETTINGS["group_size"], generation_batch_size=n,
        max_completion_length=SETTINGS["max_completion_tokens"], beta=SETTINGS["beta"], epsilon=SETTINGS["epsilon"],
        learning_rate=lr, lr_scheduler_type="constant", weight_decay=0.0, max_grad_norm=1.0, loss_type="grpo",
        scale_rewards="group", temperature=1.0, top_p=1.0, top_k=0, gradient_checkpointing=False, bf16=bf16,
        use_cpu=True, seed=seed, max_steps=a.steps, logging_steps=1, save_strategy="no", report_to="none",
        disable_tqdm=True, dataloader_num_workers=0, **extra,
    )  # fmt: skip
    model = AutoModelForCausalLM.from_pretrained(a.model_path, dtype=torch.bfloat16 if bf16 else torch.float32)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    log: dict[str, Any] = {"step_end_s": [], "train_reward": [], "budget_step": None, "learning_rate": lr}

    class Saver(TrainerCallback):
        t0 = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if not self.t0:
                self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            elapsed = time.perf_counter() - self.t0
            log["step_end_s"].append(elapsed)
            log["train_reward"].append((trainer._metrics["train"].get("reward") or [None])[-1])
            if log["budget_step"] is None and (elapsed >= budget_s or state.global_step >= a.steps):
                log["budget_step"] = state.global_step
                trainer.model.save_pretrained(f"{out}/budget")

    trainer = GRPOTrainer(model=model, reward_funcs=reward_format, args=args, train_dataset=ds, processing_class=tok,
                          peft_config=lora, callbacks=[Saver()])  # fmt: skip
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    trainer.model.save_pretrained(f"{out}/steps")
    q.put(log)


def run(target: Any, *args: Any) -> dict[str, Any]:
    """``target`` in its own process (spawned: a clean torch and thread pool per side); its log."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    log = q.get()
    p.join()
    if p.exitcode:
        raise SystemExit(f"{target.__name__} exited with {p.exitcode}")
    return dict(log)


def validation_reward(model_path: str, adapter: str | None) -> float:
    """Greedy mean reward on the held-out prompts, the adapter (if any) on the fp32 base model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from grpo_core.evaluation.validation import reward_sums

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter).merge_and_unload()  # the same function, sampled faster
    model.eval()
    _, held_out = split()
    limit = SETTINGS["max_completion_tokens"]
    total, _, n, _ = reward_sums(model, tok, held_out, [FormatGrader()], max_new_tokens=limit)
    return total / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--lr", type=float, default=None, help="both sides' learning rate (default: ours' default)")
    ap.add_argument("--no-trl", action="store_true", help="ours only (with --recipes)")
    ap.add_argument("--recipes", nargs="*", default=[], help="also: ours with each recipe at its own defaults")
    a = ap.parse_args()
    import torch

    from grpo_core.hardware.device import resolve_precision
    from grpo_core.models.catalog import prepare_smollm2

    a.model_path = str(prepare_smollm2(MODELS).resolve())
    precision = resolve_precision("auto", torch.device("cpu"))[0]
    started = time.perf_counter()
    result: dict[str, Any] = {"config": vars(a) | {"settings": SETTINGS, "precision": precision}, "runs": {}}
    base = validation_reward(a.model_path, None)
    result["base_validation_reward"] = base
    print(f"base model: validation reward {base:.3f} (greedy, 48 held-out prompts); sides train in {precision}")
    work = Path(tempfile.mkdtemp(prefix="bench-learning-"))
    for seed in [] if a.no_trl else a.seeds:
        o = run(ours, a, seed, str(work / f"ours-{seed}"), None)
        budget = o["step_end_s"][-1]
        t = run(trl, a, seed, str(work / f"trl-{seed}"), budget, precision)
        row = {
            "ours": o | {"validation": validation_reward(a.model_path, str(work / f"ours-{seed}"))},
            "trl_budget": {"validation": validation_reward(a.model_path, str(work / f"trl-{seed}/budget"))},
            "trl_steps": t | {"validation": validation_reward(a.model_path, str(work / f"trl-{seed}/steps"))},
        }
        result["runs"][f"seed{seed}"] = row
        print(
            f"seed {seed}: ours {a.steps} steps in {budget:.0f}s -> {row['ours']['validation']:.3f}; TRL at the "
            f"same {budget:.0f}s (step {t['budget_step']}) -> {row['trl_budget']['validation']:.3f}; TRL "
            f"{a.steps} steps in {t['step_end_s'][-1]:.0f}s -> {row['trl_steps']['validation']:.3f}"
        )
    if result["runs"]:
        med = {k: statistics.mean(r[k]["validation"] for r in result["runs"].values()) for k in next(iter(
            result["runs"].values()))}  # fmt: skip
        print(
            f"mean over seeds, validation reward (base {base:.3f}): same wall clock ours {med['ours']:.3f} vs TRL "
            f"{med['trl_budget']:.3f}; same steps ours {med['ours']:.3f} vs TRL {med['trl_steps']:.3f}"
        )
    for recipe in a.recipes:
        o = run(ours, a, a.seeds[0], str(work / f"recipe-{recipe}"), recipe)
        o["validation"] = validation_reward(a.model_path, str(work / f"recipe-{recipe}"))
        result["runs"][f"recipe-{recipe}"] = o
        print(
            f"recipe {recipe}: learning_rate {o['learning_rate']:g}, {a.steps} steps in {o['step_end_s'][-1]:.0f}s "
            f"-> validation {o['validation']:.3f} (base {base:.3f})"
        )
    shutil.rmtree(work, ignore_errors=True)
    result["wall_s"] = time.perf_counter() - started
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"learning-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path} ({result['wall_s']:.0f}s)")


if __name__ == "__main__":
    main()
