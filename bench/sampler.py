"""Sampling alone: one step's rollout with each sampler the trainer can use, on a CPU or a GPU.

    .venv/bin/python -m bench.sampler [--repeats 3]                  # CPU: 1 prompt × 8, ≤ 64 tokens
    python -m bench.sampler --device cuda [--model-dir PATH]          # GPU: 16 prompts × 8 = 128 rows, ≤ 256 tokens

Why: the GRPO step is half sampling on a CPU and most of it on a GPU, and the sampler's pieces (merged weights,
bf16, oneDNN-prepacked linears, CUDA graphs) each cost or save a fraction that step-level runs
(bench/grpo_vs_trl.py) cannot resolve. Every variant samples the same prompts with the same seed from the same
policy (SmolLM2-135M-Instruct unless ``--model-dir``, with a LoRA adapter made non-trivial), best of ``--repeats``
after one untimed call (on a GPU that call captures the graphs and warms vLLM up):

- ``peft generate``: the trainer's PEFT model through ``generate()`` (the ``transformers`` engine; CPU only);
- ``merged fp32`` / ``merged bf16`` (CPU): grpo_core.rollout.engines.merged with our decode loop, and
  ``merged bf16, not prepacked``: the same with plain bf16 ``nn.Linear`` weights;
- ``merged bf16, eager`` / ``merged bf16, CUDA graphs`` (GPU): the decode loop on transformers' growing cache
  (what the merged engine ran before its graphs) and the static buffers replayed as CUDA graphs
  (grpo_core.rollout.engines.graphs), in one process on one GPU, so their ratio is this machine's;
- ``vllm bf16`` (GPU, where a CUDA build of vLLM is installed): grpo_core.rollout.engines.vllm_engine with the
  adapter hot-swapped in, at ``--vllm-gpu-memory-utilization``.

It prints completion tokens/s (tokens up to and including each row's EOS, over the call's wall time), decode
steps, how far each sampler's recorded log-probs are from the trainer's (what the TIS correction absorbs), and on
a GPU the ratio of each variant to the eager loop and of the graphs to vLLM; ``--json`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch


def _policy(a: argparse.Namespace) -> tuple[Any, Any, Path]:
    from bench.shared import MODELS
    from grpo_core.models.catalog import prepare_smollm2
    from grpo_core.policy import load_policy
    from grpo_core.schemas.config import GRPOConfig

    model_dir = Path(a.model_dir) if a.model_dir else prepare_smollm2(MODELS)
    precision = "bf16" if a.device == "cuda" else "fp32"
    model, tok = load_policy(model_dir, GRPOConfig(device=a.device, precision=precision), seed=0)
    with torch.no_grad():  # an adapter that changes the outputs, as after some training
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(0)) * 0.002)
    return model, tok, model_dir


def _variants(a: argparse.Namespace, model: Any, tok: Any, model_dir: Path) -> Iterator[tuple[str, Any]]:
    """(label, a callable that samples) per variant of ``a.device``, each built only when the previous one is
    measured: vLLM's start (a minute or more of compilation on a GPU) comes after our figures are printed, so a
    run cut off keeps them."""
    import grpo_core.rollout.engines.merged as merged
    from grpo_core.rollout.engines.hf import sample

    if a.device == "cpu":
        yield "peft generate (fp32)", lambda p, kw: sample(model, tok, p, kw)
        for label, dtype, prepack in (
            ("merged fp32", torch.float32, True),
            ("merged bf16", torch.bfloat16, True),
            ("merged bf16, not prepacked", torch.bfloat16, False),
        ):
            yield label, merged.MergedEngine(model, tok, dtype, prepack=prepack).generate
        return
    for label, mode in (("merged bf16, eager", "eager"), ("merged bf16, CUDA graphs", "graphs")):
        yield label, merged.MergedEngine(model, tok, torch.bfloat16, decode_mode=mode).generate
    from grpo_core.hardware.device import vllm_on_cuda

    if vllm_on_cuda() and not a.no_vllm:
        from grpo_core.rollout.engines.vllm_engine import VLLMEngine

        engine = VLLMEngine(
            model_dir,
            tok,
            dtype="bfloat16",
            max_model_len=1024 + a.max_tokens,
            gpu_memory_utilization=a.vllm_gpu_memory_utilization,
            device="cuda:0",
            sleep=False,
        )
        _OPEN.append(engine)
        engine.sync(model, 1)
        yield "vllm bf16 (LoRA)", engine.generate


_OPEN: list[Any] = []  # engines with processes of their own, closed at the end


def _timed(fn: Any, prompts: list[str], kw: Any, device: str, repeats: int) -> tuple[float, float, Any]:
    """(first call's seconds, best of ``repeats`` later calls, the last rollout)."""

    def once() -> tuple[float, Any]:
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        ro = fn(prompts, kw)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t, ro

    first, ro = once()
    best = min(once()[0] for _ in range(repeats)) if repeats else first
    return first, best, ro


def _distance(model: Any, ro: Any, temperature: float, device: str) -> tuple[float, float]:
    """Mean and max |sampler − trainer| log-prob over the completion tokens."""
    from grpo_core.update.logprobs import completion_logprobs

    r = ro.to(next(model.parameters()).device)
    with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
        want = completion_logprobs(
            model, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask, temperature=temperature
        )
    diff = (want.float().cpu() - ro.sampling_logp)[ro.completion_mask.bool()].abs()
    return float(diff.mean()), float(diff.max())


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, help="distinct prompts (default: 1 on a CPU, 16 on a GPU)")
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, help="completion budget (default: 64 on a CPU, 256 on a GPU)")
    ap.add_argument("--model-dir", help="a local HF model folder instead of SmolLM2-135M-Instruct")
    ap.add_argument("--no-vllm", action="store_true", help="leave vLLM out on a GPU")
    ap.add_argument("--vllm-gpu-memory-utilization", type=float, default=0.3)
    ap.add_argument("--json", help="write the figures to this file")
    a = ap.parse_args()
    if a.device == "cuda":
        from bench.gpu import require_cuda

        require_cuda()
    else:
        torch.set_num_threads(os.cpu_count() or 1)
    a.prompts = a.prompts or (16 if a.device == "cuda" else 1)
    a.max_tokens = a.max_tokens or (256 if a.device == "cuda" else 64)
    from bench.shared import bench_rows
    from grpo_core.data.rows import prompt_text
    from grpo_core.rollout.engines.base import Sampling

    model, tok, model_dir = _policy(a)
    prompts = [prompt_text(r, tok) for r in bench_rows(0, a.prompts)]
    kw = Sampling(group_size=a.group_size, max_new_tokens=a.max_tokens, temperature=1.0, top_p=1.0, seed=0)
    rows = len(prompts) * a.group_size
    where = torch.cuda.get_device_name() if a.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"one rollout: {len(prompts)} prompts x {a.group_size} = {rows} rows, <= {a.max_tokens} tokens, on {where}")
    results: list[dict[str, Any]] = []
    for label, fn in _variants(a, model, tok, model_dir):
        first, best, ro = _timed(fn, prompts, kw, a.device, a.repeats)
        tokens = int(ro.completion_mask.sum())
        steps = ro.completion_ids.shape[1]
        r: dict[str, Any] = {"variant": label, "first_s": first, "best_s": best, "tokens": tokens, "steps": steps}
        r["tokens_per_s"] = tokens / best
        line = f"  {label:28s} {best:7.2f} s ({first:6.2f} first)  {tokens:6d} tokens  {tokens / best:8.0f} tok/s"
        line += f"  {steps} steps, {best / steps * 1000:6.1f} ms each"
        if ro.sampling_logp is not None:
            mean, worst = _distance(model, ro, kw.temperature, a.device)
            r["logp_vs_trainer"] = {"mean": mean, "max": worst}
            line += f"  |log-prob vs trainer| mean {mean:.1e} max {worst:.1e}"
        print(line, flush=True)
        results.append(r)
    base = next((r for r in results if r["variant"] == "merged bf16, eager"), None)
    if base is not None:
        for r in results:
            r["vs_eager"] = r["tokens_per_s"] / base["tokens_per_s"]
        ratios = ", ".join(f"{r['variant']} {r['vs_eager']:.2f}x" for r in results)
        print(f"  tokens/s against the eager loop: {ratios}")
        graphs = next(r for r in results if r["variant"].endswith("CUDA graphs"))
        vllm = next((r for r in results if r["variant"].startswith("vllm")), None)
        if vllm is not None:
            print(f"  CUDA graphs / vLLM tokens/s: {graphs['tokens_per_s'] / vllm['tokens_per_s']:.2f}")
    if a.json:
        meta = {"device": where, "rows": rows, "max_tokens": a.max_tokens, "torch": torch.__version__}
        Path(a.json).write_text(json.dumps({**meta, "results": results}, indent=2))
    for engine in _OPEN:
        engine.close()


if __name__ == "__main__":
    main()
