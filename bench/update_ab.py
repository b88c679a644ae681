"""The update alone on identical rollouts: the padded path against packing, the fused LM head, and both.

    .venv/bin/python -m bench.update_ab [--models smollm2,qwen2.5-0.5b] [--prompts 1] [--group-size 8]
                                        [--max-tokens 64] [--rollouts 3] [--repeats 2] [--precision auto]
                                        [--checkpointing] [--device auto]

Why a harness of its own: in bench/grpo_vs_trl.py every side samples its own rollouts, which diverge after the
first update, so step times there carry the spread of completion lengths and cannot resolve the update's share.
Here SmolLM2 samples ``--rollouts`` rollouts once (``--prompts`` prompts x ``--group-size``, at most
``--max-tokens`` tokens, temperature 1; by default the shape of `make bench`), and ``policy_update`` (beta = 0.04:
a reference pass, then the policy's forward and backward) runs on each of them under every path, interleaved:

- ``padded``: [left-padded prompt | right-padded completion] micro-batches, the prompt shared through a KV cache,
  the model's (B, C, V) logits (``UpdatePath(packing=False, fused_head=False)``);
- ``packed``: padding-free micro-batches (grpo_core.update.packing), the logits of all N loss tokens at once;
- ``fused_head``: padded, with the LM head in chunks fused with the log-prob (grpo_core.update.fused_head);
- ``packed+fused``: both, as the trainer runs by default;
- ``packed+fused, unshared``: every row its own segment (is sharing a prompt worth it once there is no padding?);
- ``packed+fused, compiled``: the decoder layers under torch.compile (``compile_update``); its first call, the
  compilation, is printed apart;
- ``packed+fused, captured``: packs padded to their bucket, each pass replayed as a CUDA graph on a GPU without
  checkpointing (``capture_update``, grpo_core.update.captured; on a CPU the padded passes run eagerly: the
  padding's cost); its first call, the captures, is printed apart.

The same token ids run through every model: ``qwen2.5-0.5b`` is a random-weight model of Qwen2.5-0.5B's published
shape (152k vocabulary; bench/real_models.py, built once into .state/update-ab) whose tokenizer extends
SmolLM2's, so SmolLM2's rollouts are valid input to it. Per path: the median time; the peak memory of the update
over what was allocated before it (CUDA: the allocator's peak; CPU: the resident set, polled every millisecond, in
a child process that runs each path twice, the second measured, under glibc's ``MALLOC_MMAP_THRESHOLD_=65536``:
every tensor's memory then goes back to the system when it is freed and the resident set follows the live
tensors, where in the timing process freed memory stays in malloc's heap and a path after a hungrier one would
look free); the MFU (6 x parameters x the tokens the update must process: each distinct prompt once and every
completion up to its last loss token) against the machine's best measured matmul peak; and the largest gradient
difference from the padded path (every path computes the same gradient; tests/unit/test_packing.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import torch

RESULTS = Path("bench/results")
STATE = Path(".state/update-ab")
MODELS = ("smollm2", "qwen2.5-0.5b")


def paths(graphs: bool = False) -> dict[str, Any]:
    """The paths compared; ``graphs``: the captured one replays CUDA graphs (a GPU, no checkpointing)."""
    from grpo_core.update.step import UpdatePath

    return {
        "padded": UpdatePath(packing=False, fused_head=False),
        "packed": UpdatePath(packing=True, fused_head=False),
        "fused_head": UpdatePath(packing=False, fused_head=True),
        "packed+fused": UpdatePath(packing=True, fused_head=True),
        "packed+fused, unshared": UpdatePath(packing=True, fused_head=True, share_prefix=False),
        "packed+fused, compiled": UpdatePath(packing=True, fused_head=True, compiled=True),
        "packed+fused, captured": UpdatePath(packing=True, fused_head=True, captured=True, graphs=graphs),
    }


class PeakMemory:
    """The update's peak memory over what was allocated when it began, in MB."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.peak, self._stop = device, 0, threading.Event()

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def _poll(self, base: int) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, self._rss() - base)

    def __enter__(self) -> PeakMemory:
        self.peak = 0
        if self.device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
        else:
            self._thread = threading.Thread(target=self._poll, args=(self._rss(),), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated() - self._base
        else:
            self._stop.set()
            self._thread.join()

    @property
    def mb(self) -> float:
        return self.peak / 2**20


def sample_rollouts(a: argparse.Namespace, cfg: Any, autocast: torch.dtype | None) -> list[Any]:
    """SmolLM2's rollouts of the bench's rows, sampled once, on the host."""
    from bench.shared import MODELS as CATALOG
    from bench.shared import bench_rows
    from grpo_core.data.rows import prompt_text
    from grpo_core.models.catalog import prepare_smollm2
    from grpo_core.policy import load_policy
    from grpo_core.rollout.engines.base import Sampling
    from grpo_core.rollout.engines.merged import MergedEngine

    model, tok = load_policy(prepare_smollm2(CATALOG), cfg, 0)
    engine = MergedEngine(model, tok, autocast or torch.float32)
    rows = bench_rows(0)
    out = []
    for i in range(a.rollouts):
        prompts = [prompt_text(rows[(i * a.prompts + j) % len(rows)], tok) for j in range(a.prompts)]
        kw = Sampling(a.group_size, a.max_tokens, temperature=1.0, top_p=1.0, seed=i)
        out.append(engine.generate(prompts, kw))
    del engine, model
    return out


def model_dir(name: str, dtype: torch.dtype) -> Path:
    from bench.shared import MODELS as CATALOG
    from grpo_core.models.catalog import prepare_smollm2

    if name == "smollm2":
        return prepare_smollm2(CATALOG)
    from bench.real_models import build

    dest = STATE / f"{name}-{str(dtype).removeprefix('torch.')}"
    return dest if (dest / "config.json").exists() else build(name, dest, dtype=dtype)


def useful_tokens(ro: Any) -> float:
    """Each distinct prompt once, and every completion up to its last loss token."""
    from grpo_core.models.prefix_cache import shared_prefixes
    from grpo_core.update.packing import span_lengths

    groups = shared_prefixes(ro.prompt_ids, ro.prompt_mask)
    prompts = ro.prompt_mask[groups[0]] if groups is not None else ro.prompt_mask
    return float(prompts.sum() + span_lengths(ro.completion_mask).sum())


def run_model(name: str, a: argparse.Namespace, cfg: Any, placement: Any, rollouts: list[Any]) -> dict[str, Any]:
    from grpo_core.policy import load_policy
    from grpo_core.update.step import policy_update

    dtype = placement.autocast or torch.float32
    model, _ = load_policy(model_dir(name, dtype), cfg, 0)
    if cfg.gradient_checkpointing:
        from grpo_core.hardware.memory import enable_checkpointing

        enable_checkpointing(model)
    params = float(sum(p.numel() for p in model.parameters()))
    variants = paths(placement.device.type == "cuda" and not cfg.gradient_checkpointing)
    times: dict[str, list[float]] = {k: [] for k in variants}
    peaks: dict[str, list[float]] = {k: [] for k in variants}  # on CUDA; a CPU's come from memory_child
    grad_diff: dict[str, float] = dict.fromkeys(variants, 0.0)
    tokens = []
    first_call: dict[str, float] = {}
    for k, path in variants.items():  # warm-up: first calls (allocator, kernels' first use, compilation)
        adv = torch.randn(rollouts[0].completion_ids.shape[0], generator=torch.Generator().manual_seed(0))
        t = time.perf_counter()
        policy_update(model, rollouts[0], adv, cfg, placement.autocast, path=path)
        first_call[k] = time.perf_counter() - t
        model.zero_grad(set_to_none=True)
    for i, ro in enumerate(rollouts):
        adv = torch.randn(ro.completion_ids.shape[0], generator=torch.Generator().manual_seed(i))
        tokens.append(useful_tokens(ro))
        for _ in range(a.repeats):
            reference = None
            for k, path in variants.items():
                with PeakMemory(placement.device) as mem:
                    t = time.perf_counter()
                    policy_update(model, ro, adv, cfg, placement.autocast, path=path)
                    if placement.device.type == "cuda":
                        torch.cuda.synchronize()
                    times[k].append(time.perf_counter() - t)
                if placement.device.type == "cuda":
                    peaks[k].append(mem.mb)
                grads = [p.grad.detach().float().clone() for p in model.parameters() if p.grad is not None]
                if reference is None:
                    reference = grads
                else:
                    diff = max(float((g - r).abs().max()) for g, r in zip(grads, reference, strict=True))
                    grad_diff[k] = max(grad_diff[k], diff)
                model.zero_grad(set_to_none=True)
    med_tokens = statistics.median(tokens)
    return {
        "params": params,
        "vocab": int(model.config.vocab_size),
        "tokens_median": med_tokens,
        "times": times,
        "peak_mb": peaks,
        "median_s": {k: statistics.median(v) for k, v in times.items()},
        "peak_mb_max": {k: max(v) for k, v in peaks.items() if v},
        "max_grad_diff_vs_padded": grad_diff,
        "flops_per_update": 6 * params * med_tokens,
        "first_call_s": first_call,
    }


def memory_child(a: argparse.Namespace) -> None:
    """``--memory-child FILE``: each path's peak resident memory over one update, per model, into FILE.json."""
    from grpo_core.policy import load_policy
    from grpo_core.update.step import policy_update

    state = torch.load(a.memory_child, weights_only=False)
    cfg, placement, rollouts = state["cfg"], state["placement"], state["rollouts"]
    out: dict[str, dict[str, float]] = {}
    for name in a.models:
        model, _ = load_policy(model_dir(name, placement.autocast or torch.float32), cfg, 0)
        if cfg.gradient_checkpointing:
            from grpo_core.hardware.memory import enable_checkpointing

            enable_checkpointing(model)
        adv = torch.randn(rollouts[0].completion_ids.shape[0], generator=torch.Generator().manual_seed(0))
        out[name] = {}
        for k, path in paths().items():
            for _ in range(2):  # the first call allocates what every later one reuses; the second is measured
                with PeakMemory(placement.device) as mem:
                    policy_update(model, rollouts[0], adv, cfg, placement.autocast, path=path)
                model.zero_grad(set_to_none=True)
            out[name][k] = mem.mb
        del model
    Path(a.memory_child + ".json").write_text(json.dumps(out))


def cpu_peaks(a: argparse.Namespace, cfg: Any, placement: Any, rollouts: list[Any]) -> dict[str, dict[str, float]]:
    """``memory_child`` in a process of its own with every allocation of 64 KiB or more mmapped."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        state = str(Path(tmp) / "state.pt")
        torch.save({"cfg": cfg, "placement": placement, "rollouts": rollouts}, state)
        argv = [sys.executable, "-m", "bench.update_ab", "--models", ",".join(a.models), "--memory-child", state]
        env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536"}
        subprocess.run(argv, env=env, check=True)
        peaks: dict[str, dict[str, float]] = json.loads(Path(state + ".json").read_text())
    return peaks


def best_peak(device: torch.device) -> tuple[str, float]:
    """(name, GFLOP/s) of the machine's fastest measured matmul: bf16 or fp32 on the CPU, bf16 on a GPU."""
    if device.type == "cuda":
        from bench.gpu import bf16_matmul_gflops

        return "bf16 (measured)", bf16_matmul_gflops()
    from bench.grpo_vs_trl import matmul_peaks

    peaks = matmul_peaks()
    name = max(peaks, key=lambda k: peaks[k])
    return name, peaks[name]


def report(name: str, r: dict[str, Any], peak: tuple[str, float]) -> None:
    med, mem = r["median_s"], r["peak_mb_max"]
    print(f"\n{name}: {r['params'] / 1e6:.0f}M parameters, vocabulary {r['vocab']}, {r['tokens_median']:.0f} tokens")
    print(f"  {'path':24s} {'median s':>9s} {'speed-up':>9s} {'peak MB':>9s} {'x padded':>9s} {'MFU':>7s} grad Δ")
    for k, s in med.items():
        mfu = r["flops_per_update"] / s / (peak[1] * 1e9)
        print(
            f"  {k:24s} {s:9.3f} {med['padded'] / s:8.2f}x {mem[k]:9.0f} {mem[k] / max(mem['padded'], 1e-9):8.2f}x "
            f"{mfu:7.2%} {r['max_grad_diff_vs_padded'][k]:.1e}"
        )
    print(f"  first call of the compiled path (the compilation): {r['first_call_s']['packed+fused, compiled']:.1f} s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated: {', '.join(MODELS)}")
    ap.add_argument("--prompts", type=int, default=1)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rollouts", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--checkpointing", action="store_true", help="gradient checkpointing on (auto's choice on a GPU)")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    unknown = set(a.models) - set(MODELS)
    if unknown:
        ap.error(f"unknown model(s) {sorted(unknown)}; known: {', '.join(MODELS)}")
    return a


def main(argv: list[str] | None = None) -> None:
    from grpo_core.hardware.device import resolve_placement
    from grpo_core.schemas.config import GRPOConfig

    a = parse_args(argv)
    if a.memory_child:
        return memory_child(a)
    placement = resolve_placement(a.device, a.precision)
    cfg = GRPOConfig(
        precision=placement.precision,
        device=str(placement.device),
        beta=0.04,
        group_size=a.group_size,
        batch_size=a.prompts,
        micro_batch_size=a.prompts * a.group_size,  # the whole step in one micro-batch, on every path
        max_completion_tokens=a.max_tokens,
        gradient_checkpointing=a.checkpointing,
    )
    print(f"{placement.device} ({placement.device_name}), {placement.precision}: {placement.precision_reason}")
    rollouts = sample_rollouts(a, cfg, placement.autocast)
    peak = best_peak(placement.device)
    print(f"best measured matmul peak: {peak[0]}, {peak[1]:.0f} GFLOP/s")
    results = {name: run_model(name, a, cfg, placement, rollouts) for name in a.models}
    if placement.device.type == "cpu":
        for name, mb in cpu_peaks(a, cfg, placement, rollouts).items():
            results[name]["peak_mb_max"] = mb
    for name, r in results.items():
        report(name, r, peak)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"update_ab-{time.strftime('%Y%m%d-%H%M%S')}.json"
    config = vars(a) | {"device": str(placement.device), "precision": placement.precision}
    out.write_text(json.dumps({"config": config, "peak": peak, "results": results}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
