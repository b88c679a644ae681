"""How good the job estimate is (api.billing.estimate): jobs of the demo model on this machine, the estimate asked
before each target job against the device time its usage records measured.

    python -m bench.estimate [--out FILE]

An embedded stack like ``make demo``'s (SQLite, a filesystem broker, a local object store under
.state/bench-estimate), the demo model registered, the demo's dataset and grader. First ``CALIBRATION`` jobs run
(three shapes), so the estimate has history to calibrate from; then for each of ``TARGETS`` (three other shapes:
group size, completion tokens, steps and prompts per step all differ) the estimate is asked, the job runs, and its
``usage.device_seconds`` is compared. Each target joins the history of the next, as on a live service. Prints a
Markdown table (docs/guides/costs.md carries the one this printed, naming the machine) and exits 1 when a target
is off by more than 25 %.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from scripts.demo import GRADER_SOURCE, HYPERPARAMETERS, register_demo_model, write_data
from scripts.local_stack import BIN, ROOT, Proc, api_command, free_port, wait_http, worker_command

STATE = ROOT / ".state" / "bench-estimate"
MODELS = ROOT / ".state" / "models"
BOUND = 0.25
SHAPE_KEYS = ("group_size", "batch_size", "max_completion_tokens", "max_steps")
CALIBRATION = [(8, 4, 24, 6), (4, 4, 48, 5), (16, 2, 16, 5)]
TARGETS = [(8, 4, 24, 10), (4, 8, 32, 6), (12, 2, 40, 8)]


def body(model: str, files: dict[str, str], shape: tuple[int, ...]) -> dict[str, Any]:
    """The demo's job (its grader and hyperparameters) with this shape."""
    hp = HYPERPARAMETERS | dict(zip(SHAPE_KEYS, shape, strict=True)) | {"micro_batch_size": 16}
    grader = {"type": "python", "name": "first_number", "source": GRADER_SOURCE}
    return {
        "model": model,
        "training_file": files["training"],
        "validation_file": files["validation"],
        "seed": 0,
        "method": {"type": "reinforcement", "reinforcement": {"grader": grader, "hyperparameters": hp}},
    }


def run_job(api: httpx.Client, job_body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/fine_tuning/jobs", json=job_body)
    r.raise_for_status()
    job_id = r.json()["id"]
    while True:
        job = api.get(f"/v1/fine_tuning/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            if job["status"] != "succeeded":
                sys.exit(f"{job_id} ended {job['status']}: {job.get('error')}")
            return dict(job)
        time.sleep(1)


def start(port: int) -> tuple[dict[str, str], Proc, Proc]:
    STATE.mkdir(parents=True, exist_ok=True)
    for stale in ("rft.db", "rft.db-wal", "rft.db-shm"):
        (STATE / stale).unlink(missing_ok=True)
    env = {
        **os.environ,
        "STATE_DIR": str(STATE),
        "MODEL_CATALOG_DIR": str(STATE / "no-catalog"),
        "PYTHONPATH": str(ROOT),
        "API_URL": f"http://127.0.0.1:{port}",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for key in ("DATABASE_URL", "BROKER_URL", "S3_ENDPOINT_URL", "S3_BUCKET", "API_KEY"):
        env.pop(key, None)
    subprocess.run([str(BIN / "alembic"), "upgrade", "head"], cwd=ROOT, env=env, check=True, capture_output=True)
    logs = STATE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return env, Proc("api", api_command(port), env, logs), Proc("worker", worker_command(), env, logs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="also write the rows here, as JSON lines, as they come")
    args = ap.parse_args()
    from grpo_core.models.catalog import prepare_smollm2

    prepare_smollm2(MODELS)
    train, valid = write_data(STATE / "data", seed=0)
    port = free_port()
    env, api_proc, worker = start(port)
    rows = []
    try:
        model = register_demo_model(env)
        wait_http(f"http://127.0.0.1:{port}/healthz", proc=api_proc.popen)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as api:
            files = {}
            for name, path in (("training", train), ("validation", valid)):
                up = api.post(
                    "/v1/files", data={"purpose": "fine-tune"}, files={"file": (path.name, path.read_bytes())}
                )
                files[name] = up.raise_for_status().json()["id"]
            for shape in CALIBRATION:
                job = run_job(api, body(model, files, shape))
                print(f"calibration {shape}: {job['usage']['device_seconds']:.1f} device-seconds", flush=True)
            for shape in TARGETS:
                est = (
                    api.post("/v1/fine_tuning/jobs/estimate", json=body(model, files, shape)).raise_for_status().json()
                )
                job = run_job(api, body(model, files, shape))
                measured, expected = job["usage"]["device_seconds"], est["device_seconds"]["expected"]
                row = {
                    "shape": dict(zip(SHAPE_KEYS, shape, strict=True)),
                    "estimate": expected,
                    "low": est["device_seconds"]["low"],
                    "high": est["device_seconds"]["high"],
                    "measured": round(measured, 1),
                    "error": round(expected / measured - 1, 3),
                    "confidence": est["confidence"],
                    "device_kind": est["device_kind"],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
                if args.out:
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
    finally:
        worker.stop()
        api_proc.stop()
    header = "| group size | prompts/step | max completion tokens | steps | estimate (s) | range (s) | measured (s) |"
    print(f"\n{header} error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        s = r["shape"]
        print(
            f"| {s['group_size']} | {s['batch_size']} | {s['max_completion_tokens']} | {s['max_steps']} | "
            f"{r['estimate']:.0f} | {r['low']:.0f}–{r['high']:.0f} | {r['measured']:.0f} | {r['error']:+.0%} |"
        )
    print(f"device kind: {rows[0]['device_kind'] if rows else '-'}")
    return 0 if rows and all(abs(r["error"]) <= BOUND for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
