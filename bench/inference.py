"""Latency to first token and tokens/s of the inference path, measured side by side in one run:

- vLLM directly vs through the API (the proxy's cost: ownership check, adapter cache, SSE relay);
- the base model vs a LoRA adapter of rank 16 on all linear layers (vLLM's LoRA kernels; on CPU the reference
  torch ops);
- one request at a time (latency) and 8 at once (throughput).

It starts everything itself on the embedded defaults (SQLite, local object store): the API with
INFERENCE_BASE_URL, vLLM through ``python -m worker.inference_server`` for SmolLM2-135M-Instruct, and a succeeded
job whose checkpoint is a random LoRA adapter (registered through the internal worker API, as a worker would):
speed does not depend on what the adapter learned.

    .venv/bin/python -m bench.inference [--requests 8] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from grpo_core.models.catalog import SMOLLM2_ID, prepare_smollm2
from scripts.local_stack import BIN, ROOT, Proc, api_command, free_port, wait_http

PROMPT = "Write one sentence about the sea."


def stream_once(url: str, model: str, max_tokens: int, headers: dict[str, str]) -> tuple[float, float, int]:
    """(seconds to the first token, seconds in all, tokens) of one streamed chat completion at temperature 0."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,  # vLLM's extra: every request decodes max_tokens, so runs compare
    }
    started = time.perf_counter()
    first = None
    tokens = 0
    with httpx.stream("POST", f"{url}/chat/completions", json=body, headers=headers, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0]["delta"].get("content") and first is None:
                first = time.perf_counter() - started
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    return first or float("nan"), time.perf_counter() - started, tokens


def measure(url: str, model: str, n: int, max_tokens: int, headers: dict[str, str]) -> dict[str, float]:
    stream_once(url, model, 4, headers)  # warm-up (and the adapter's first load)
    runs = [stream_once(url, model, max_tokens, headers) for _ in range(n)]
    ttft = statistics.median(r[0] for r in runs)
    decode = statistics.median((r[2] - 1) / (r[1] - r[0]) for r in runs)
    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        batch = list(pool.map(lambda _: stream_once(url, model, max_tokens, headers), range(8)))
    wall = time.perf_counter() - started
    return {"ttft_s": ttft, "tokens_per_s": decode, "batch8_tokens_per_s": sum(r[2] for r in batch) / wall}


def random_adapter(catalog: Path, out: Path) -> bytes:
    """A LoRA adapter (r=16, all linear layers) with random B: the tar a worker uploads."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(catalog / SMOLLM2_ID)
    model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01)
    model.save_pretrained(out, save_embedding_layers=False)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            tar.add(out / name, arcname=name)
    return buf.getvalue()


def fine_tuned_model(api: str, state: Path, token: str, adapter: bytes) -> str:
    """A succeeded job of SmolLM2 whose one checkpoint is ``adapter``, made as a worker would."""
    from runtime.storage import LocalStore

    worker = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=api, timeout=120) as c:
        rows = "".join(json.dumps({"prompt": "1+1=", "answer": "2"}) + "\n" for _ in range(4)).encode()
        f = c.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", rows)}).json()
        grader = {"type": "string_check", "name": "x", "input": "{{sample.output_text}}", "reference": "2",
                  "operation": "eq"}  # fmt: skip
        method = {"type": "reinforcement", "reinforcement": {"grader": grader, "hyperparameters": {"batch_size": 1}}}
        job = c.post("/v1/fine_tuning/jobs", json={"model": SMOLLM2_ID, "training_file": f["id"], "method": method})
        job_id = job.json()["id"]
        claim = c.post(f"/internal/jobs/{job_id}/claim", json={"worker_id": "bench", "claim_id": "bench-claim"},
                       headers=worker).json()  # fmt: skip
        key = f"{claim['object_prefix']}checkpoints/bench.tar"
        blob = state / "bench-adapter.tar"
        blob.write_bytes(adapter)
        LocalStore(state / "objects").put_file(key, blob)
        body = {"epoch": claim["epoch"], "step_number": 1, "object_key": key}
        c.post(f"/internal/jobs/{job_id}/checkpoints", json=body, headers=worker).raise_for_status()
        done = {"epoch": claim["epoch"], "status": "succeeded"}
        c.post(f"/internal/jobs/{job_id}/finish", json=done, headers=worker).raise_for_status()
        return str(c.get(f"/v1/fine_tuning/jobs/{job_id}").json()["fine_tuned_model"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=8, help="Sequential streamed requests per row.")
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    catalog = ROOT / ".state" / "models"
    prepare_smollm2(catalog)
    with tempfile.TemporaryDirectory(prefix="bench-inference-") as tmp:
        state = Path(tmp)
        logs = state / "logs"
        logs.mkdir()
        api_port, vllm_port = free_port(), free_port()
        vllm_url = f"http://127.0.0.1:{vllm_port}/v1"
        env = {
            "PATH": f"{BIN}:/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "STATE_DIR": str(state),
            "MODEL_CATALOG_DIR": str(catalog),
            "INFERENCE_BASE_URL": vllm_url,
            "RATE_LIMIT_PER_MINUTE": "0",
            "LOG_FORMAT": "text",
        }
        import subprocess

        subprocess.run([str(BIN / "alembic"), "upgrade", "head"], cwd=ROOT, env=env, check=True, capture_output=True)
        api = Proc("api", api_command(api_port), env, logs)
        server = Proc("inference", [str(BIN / "python"), "-m", "worker.inference_server", SMOLLM2_ID,
                                    "--port", str(vllm_port)], env, logs)  # fmt: skip
        try:
            api_url = f"http://127.0.0.1:{api_port}"
            wait_http(f"{api_url}/healthz", proc=api.popen)
            started = time.monotonic()
            wait_http(f"{vllm_url}/models", timeout=600, proc=server.popen)
            print(f"vLLM server ready in {time.monotonic() - started:.0f} s")
            token = (state / "worker_token").read_text().strip()
            adapter = random_adapter(catalog, state / "adapter")
            name = fine_tuned_model(api_url, state, token, adapter)
            # the same adapter loaded directly into vLLM, for the proxy's cost on the LoRA path too
            direct = {"lora_name": "bench-direct", "lora_path": str(state / "adapter")}
            httpx.post(f"{vllm_url}/load_lora_adapter", json=direct, timeout=120).raise_for_status()
            rows: dict[str, dict[str, float]] = {}
            for label, url, model in (
                ("base, vLLM direct", vllm_url, SMOLLM2_ID),
                ("base, through the API", f"{api_url}/v1", SMOLLM2_ID),
                ("LoRA r=16, vLLM direct", vllm_url, "bench-direct"),
                ("LoRA r=16, through the API", f"{api_url}/v1", name),
            ):
                rows[label] = measure(url, model, args.requests, args.max_tokens, {})
                r = rows[label]
                print(f"{label:<28} first token {1000 * r['ttft_s']:7.1f} ms   decode {r['tokens_per_s']:6.1f} tok/s"
                      f"   8 at once {r['batch8_tokens_per_s']:6.1f} tok/s", flush=True)  # fmt: skip
            base_api, lora_api = rows["base, through the API"], rows["LoRA r=16, through the API"]
            print(f"API / direct, first token: base {base_api['ttft_s'] / rows['base, vLLM direct']['ttft_s']:.2f}, "
                  f"LoRA {lora_api['ttft_s'] / rows['LoRA r=16, vLLM direct']['ttft_s']:.2f}")  # fmt: skip
            print(f"LoRA / base decode tokens/s (API): {lora_api['tokens_per_s'] / base_api['tokens_per_s']:.2f}")
        finally:
            server.stop()
            api.stop()
            if api.popen.returncode not in (0, -15, None):
                sys.stderr.write((logs / "api.log").read_text()[-3000:])


if __name__ == "__main__":
    main()
