"""Our GRPO trainer (grpo_core) against TRL's GRPOTrainer, step for step, on the demo model (issue 7).

    .venv/bin/python -m bench.grpo_vs_trl [--quick] [--steps 4] [--prompts 1] [--trl-gc]   (or `make bench`)

Why it measures what it measures:

* The question is "what does a GRPO step cost with our trainer vs. the reference implementation", so both run the
  same work: SmolLM2-135M-Instruct (prepare_smollm2), the demo's single-digit additions, one plain Python reward
  (1.0 when the completion's last number is the answer), the same seed and algorithm settings: G=8, one prompt
  per step, ≤64 completion tokens, β=0.04, ε=0.2, LoRA r=16/α=32 on all linear layers, lr 1e-5 constant,
  temperature 1, fp32 (bf16 is ~400x slower than fp32 on this CPU: bench/matmul_dtypes.py), TRL's loss_type
  "grpo" (= our seq_mean_token_mean), no gradient checkpointing (TRL turns it on by default; ``--trl-gc`` adds a
  third side with TRL's default on), TRL with use_vllm=False and generation_batch_size = G × prompts.
* The machine is shared and noisy, so absolute seconds mean little: each side runs its own unmodified training loop
  in its own process, paused between steps at a gate (our Callbacks.should_stop, a TRL TrainerCallback), and the
  parent lets one step run at a time, alternating ABBA after a warm-up step each. Drift hits both sides alike;
  the ratio of medians is the result. Separate processes also give each side a clean peak RSS (ru_maxrss).
* Per phase: ours reports timing {sampling, scoring, training} in its metrics; TRL's generate (_generate_single_turn)
  and reward call (_calculate_rewards) are wrapped with timers, and the rest of its step is its update (reference
  log-probs, loss, backward, optimizer), which is what our "training" phase holds too.
* MFU of our update (policy_update: reference forward + policy forward/backward, timed around the call) against an
  fp32 matmul peak measured in this run: FLOPs ≈ 6 · N · T, N = all model parameters (frozen + LoRA, the tied head
  counted once), T = prompt + completion tokens of the step's sequences (padding excluded). With LoRA the frozen
  weights need no weight gradient, so 6N ≈ 2N reference forward + 2N policy forward + 2N input-gradient backward.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import random
import re
import resource
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODELS = Path(".state/models")
RESULTS = Path("bench/results")
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
        from grpo_core.rewards.graders import GraderResult

        return GraderResult([last_number_reward(t, r["answer"]) for t, r in zip(texts, rows, strict=True)])


def _rows(seed: int, n: int = 64) -> list[dict[str, Any]]:
    from scripts.demo import make_rows

    return make_rows(random.Random(seed), n)


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _setup(a: argparse.Namespace) -> Path:
    import torch

    from grpo_core.models import prepare_smollm2

    torch.set_num_threads(os.cpu_count() or 1)
    return prepare_smollm2(MODELS)


def worker_ours(conn: Any, a: argparse.Namespace) -> None:
    """grpo_core.trainer.train, gated per step through Callbacks.should_stop."""
    model_dir = _setup(a)
    import grpo_core.trainer as tr
    from grpo_core.config import GRPOConfig

    cfg = GRPOConfig(
        group_size=a.group_size,
        batch_size=a.prompts,
        max_completion_tokens=a.max_tokens,
        beta=0.04,
        epsilon=0.2,
        learning_rate=1e-5,
        loss_aggregation="seq_mean_token_mean",
        temperature=1.0,
        precision="fp32",
        max_steps=10_000,  # the parent decides when to stop
        micro_batch_size=a.group_size * a.prompts,
    )
    update: dict[str, float] = {}
    original = tr.policy_update

    def timed_update(model: Any, ro: Any, *args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = original(model, ro, *args, **kw)
        update["policy_update_s"] = time.perf_counter() - t
        update["update_tokens"] = float(ro.prompt_mask.sum() + ro.completion_mask.sum())
        update["params"] = float(sum(p.numel() for p in model.parameters()))  # frozen + LoRA, tied head once
        return out

    tr.policy_update = timed_update  # the loop calls it by this module-level name

    class Gate:
        t0 = 0.0

        def on_message(self, message: str, level: str = "info") -> None:
            pass

        def on_step(self, m: dict[str, Any]) -> None:
            wall = time.perf_counter() - self.t0
            ph = {k: m["timing"][k] for k in ("sampling", "scoring", "training")}
            ph["update"] = wall - ph["sampling"] - ph["scoring"]
            conn.send(
                {
                    "wall": wall,
                    "phases": ph,
                    "completion_tokens": m["tokens"],
                    "reward": m.get("train_reward_mean"),
                    **update,
                }
            )

        def on_checkpoint(self, *args: Any) -> None:
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


def worker_trl(conn: Any, a: argparse.Namespace, gradient_checkpointing: bool = False) -> None:
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
        bf16=False,
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
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
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


WORKERS = {"ours": worker_ours, "trl": worker_trl}


def _worker_trl_gc(conn: Any, a: argparse.Namespace) -> None:
    worker_trl(conn, a, gradient_checkpointing=True)


WORKERS["trl_gc"] = _worker_trl_gc


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def fp32_peak_gflops() -> float:
    import torch

    from bench.matmul_dtypes import gflops

    torch.set_num_threads(os.cpu_count() or 1)
    return gflops(torch.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 measured steps per side (under ~3 minutes)")
    ap.add_argument("--steps", type=int, default=4, help="measured steps per side after one warm-up step")
    ap.add_argument("--prompts", type=int, default=1, help="prompts per step")
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trl-gc", action="store_true", help="also run TRL with its default gradient checkpointing")
    a = ap.parse_args()
    steps = 2 if a.quick else a.steps
    sides = ["ours", "trl"] + (["trl_gc"] if a.trl_gc else [])
    started = time.perf_counter()
    peak = fp32_peak_gflops()
    ctx = mp.get_context("spawn")
    procs, conns, ready = {}, {}, {}
    for s in sides:  # load in parallel: loading is not measured
        parent, child = ctx.Pipe()
        procs[s] = ctx.Process(target=WORKERS[s], args=(child, a), name=f"bench-{s}")
        procs[s].start()
        conns[s] = parent
    for s in sides:
        ready[s] = conns[s].recv()
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    warm: dict[str, dict[str, Any]] = {}
    for s in sides:
        conns[s].send("step")
        warm[s] = conns[s].recv()
    for i in range(steps):  # ABBA: the order flips every round so drift in load hits both sides alike
        for s in sides if i % 2 == 0 else sides[::-1]:
            conns[s].send("step")
            runs[s].append(conns[s].recv())
    rss = {}
    for s in sides:
        conns[s].send("stop")
        rss[s] = conns[s].recv()["maxrss_mb"]
        procs[s].join(timeout=120)
    peak = max(peak, fp32_peak_gflops())  # again with the workers gone: the better of two noisy measurements

    params = runs["ours"][0]["params"]
    summary: dict[str, Any] = {}
    for s in sides:
        r = runs[s]
        walls = [x["wall"] for x in r]
        summary[s] = {
            "median_step_s": _med(walls),
            "phases_median_s": {k: _med([x["phases"][k] for x in r]) for k in r[0]["phases"]},
            "completion_tokens_per_s": _med([x["completion_tokens"] / x["wall"] for x in r]),
            "peak_rss_mb": rss[s],
        }
    o = runs["ours"]
    flops = [6 * params * x["update_tokens"] for x in o]
    mfu = _med([f / x["policy_update_s"] / (peak * 1e9) for f, x in zip(flops, o, strict=True)])
    ratio = summary["ours"]["median_step_s"] / summary["trl"]["median_step_s"]
    update_ratio = summary["ours"]["phases_median_s"]["update"] / summary["trl"]["phases_median_s"]["update"]

    print(f"GRPO step, SmolLM2-135M-Instruct fp32, G={a.group_size} x {a.prompts} prompt(s), <= {a.max_tokens} tokens,")
    print(f"  {os.cpu_count()} threads, 1 warm-up + {steps} measured steps per side, alternated ABBA")
    for s in sides:
        m = summary[s]
        ph = ", ".join(f"{k} {v:.2f}" for k, v in m["phases_median_s"].items())
        steps_txt = " ".join(f"{x['wall']:.2f}" for x in runs[s])
        print(f"{s:7s} median step {m['median_step_s']:6.2f}s  [{steps_txt}]")
        print(f"        phases (median s): {ph}")
        print(f"        {m['completion_tokens_per_s']:.1f} completion tok/s, peak RSS {m['peak_rss_mb']:.0f} MB")
    print(f"ratio ours/TRL (median step): {ratio:.3f}   update phase: {update_ratio:.3f}")
    if "trl_gc" in summary:
        gc_ratio = summary["ours"]["median_step_s"] / summary["trl_gc"]["median_step_s"]
        print(f"ratio ours/TRL-with-grad-checkpointing: {gc_ratio:.3f}")
    print(
        f"our update MFU: {mfu:.1%} of fp32 matmul peak {peak:.1f} GFLOP/s "
        f"(FLOPs = 6 x {params / 1e6:.1f}M params x prompt+completion tokens, over policy_update time)"
    )

    import peft
    import torch
    import transformers
    import trl

    result = {
        "config": {**vars(a), "measured_steps": steps, "sides": sides},
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
            "peft": peft.__version__,
        },
        "machine": {"cpu_count": os.cpu_count(), "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "fp32_peak_gflops": peak,
        "model_params": params,
        "warmup": warm,
        "steps": runs,
        "summary": summary,
        "ratio_ours_over_trl": ratio,
        "update_ratio_ours_over_trl": update_ratio,
        "our_update_mfu": mfu,
        "mfu_formula": "6 * N_params(frozen+LoRA) * (prompt+completion tokens) / policy_update seconds / fp32 peak",
        "wall_s": time.perf_counter() - started,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path} ({result['wall_s']:.0f}s)")


if __name__ == "__main__":
    main()
