"""Load benchmark of the public API: open-loop status polls and event pages against one uvicorn on PostgreSQL.

    .venv/bin/python -m bench.api_load [--rate 200] [--seconds 20] [--quick] [--no-first-step] [--keep-db]

What runs: one uvicorn process (``--workers 1``, log level warning: the load generator needs the other core) on a
fresh PostgreSQL database built by ``alembic upgrade head`` (dropped at the end so every run starts from the same
near-empty tables and nothing piles up on the shared server; ``--keep-db`` keeps it to inspect), an empty Redis db
as the broker (flushed at the end) and a temporary STATE_DIR holding the object store and the tiny test model.

Seed: one job, created with no worker running, then claimed through the internal worker API with WORKER_TOKEN
(the real path: events need a live lease) and given 200 per-step metrics events shaped like the worker's, so it
looks like a job mid-run (steps_done 200/1000) — the state in which users poll.

Load: requests are *scheduled* every 1/rate s whatever the answers do (open loop). ``latency`` runs from the
scheduled time to the end of the response, so a stalled server or a full connection pool counts against it
(no coordinated omission); ``service`` runs from the moment the request headers hit the wire (httpx trace) to
the response. 50% GET /v1/fine_tuning/jobs/{id}, 50% GET …/events?limit=20&after=<random event id>; 1 s of
warm-up at the same rate is discarded. CPU: seconds used by the API process, by all postgres processes and by
this generator, per wall second of the measured window (psutil).

First step (default; ``--no-first-step`` skips it): a Celery worker is started as ``make test`` starts it
(scripts.local_stack.worker_command) and awaited until it logs ``ready``; then a 2-step job on the tiny model
with a string_check grader is POSTed and polled every 50 ms: POST→running (the doorbell through Redis, the claim)
and running→steps_done ≥ 1 (model and data load plus one GRPO step) — what a user waits before the first metric.

Pitfalls: RATE_LIMIT_PER_MINUTE is set to 0 here (the default 600/min per key would answer 429 past 10 req/s);
the service runs in open mode (no API_KEY, no project key); WORKER_TOKEN is required once DATABASE_URL is set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from scripts.local_stack import ROOT, Proc, api_command, free_port, wait_http, worker_command
from tests.helpers import ARITH_ROWS, jsonl, migrate
from tests.integration.stack import service_env

PG = os.environ.get("RFT_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
REDIS = os.environ.get("RFT_BENCH_REDIS", "redis://127.0.0.1:6379")
RESULTS = ROOT / "bench" / "results"
MODEL = "tiny-llama"
GRADER = {"type": "string_check", "name": "exact", "reference": "{{item.answer}}", "operation": "eq"}
SEED_STEPS, SEED_TOTAL = 200, 1000


@dataclass
class Sample:
    endpoint: str
    scheduled: float  # perf_counter seconds
    called: float  # when the generator got to it (late = the generator itself is saturated)
    sent: float  # request headers on the wire (after waiting for a pooled connection)
    done: float
    status: int  # 0 = exception (timeout, reset)


def job_body(file_id: str, **hp: Any) -> dict[str, Any]:
    """A small valid GRPO job on the tiny model; string_check needs no python-grader sandbox (bwrap)."""
    hyper = {"group_size": 4, "batch_size": 2, "max_completion_tokens": 6, "learning_rate": 1e-3} | hp
    method = {"type": "reinforcement", "reinforcement": {"grader": GRADER, "hyperparameters": hyper}}
    return {"model": MODEL, "training_file": file_id, "seed": 7, "method": method}


def submit(api: httpx.Client, **hp: Any) -> tuple[dict[str, Any], float]:
    """Upload the arithmetic file and create a job (tests/integration/flow.py's calls); returns (job, POST s)."""
    files = {"file": ("arith.jsonl", jsonl(ARITH_ROWS))}
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files=files).raise_for_status().json()
    t = time.perf_counter()
    job = api.post("/v1/fine_tuning/jobs", json=job_body(f["id"], **hp)).raise_for_status().json()
    return job, time.perf_counter() - t


def metrics_event(step: int) -> dict[str, Any]:
    """A worker's metrics event (4 logged rollouts, the demo's default), with random values, without torch."""
    from tests.helpers import metrics_event as event

    rng = random.Random(step)
    sample = {"prompt": "3+1=", "completion": "4", "reward": 1.0, "rewards": {"exact": 1.0}, "advantage": 0.5}
    random_fields = ("loss", "kl", "clip_ratio", "entropy", "grad_norm", "completion_length_mean")
    return event(
        step, SEED_TOTAL, reward=rng.random(), samples=[sample] * 4, **{k: rng.random() for k in random_fields}
    )


def seed(api: httpx.Client, token: str) -> tuple[str, int, list[str]]:
    """One job mid-run with SEED_STEPS metrics events; returns (job id, lease epoch, every event id)."""
    job, _ = submit(api, max_steps=SEED_TOTAL)
    internal, path = {"Authorization": f"Bearer {token}"}, f"/internal/jobs/{job['id']}"
    body = {"worker_id": "bench-seed", "claim_id": secrets.token_hex(8)}
    epoch = api.post(f"{path}/claim", json=body, headers=internal).raise_for_status().json()["epoch"]
    for start in range(1, SEED_STEPS + 1, 50):  # the worker posts one per step; batches only speed the seeding
        events = [metrics_event(s) for s in range(start, min(start + 50, SEED_STEPS + 1))]
        body = {"epoch": epoch, "events": events}
        api.post(f"{path}/events", json=body, headers=internal).raise_for_status()
    ids: list[str] = []
    after = None
    while True:
        page = api.get(f"/v1/fine_tuning/jobs/{job['id']}/events", params={"limit": 100, "after": after}).json()
        ids += [e["id"] for e in page["data"]]
        if not page["has_more"]:
            return job["id"], epoch, ids
        after = ids[-1]


async def run_load(url: str, job_id: str, event_ids: list[str], rate: float, seconds: float) -> list[Sample]:
    """Fire rate*seconds requests at fixed scheduled times (open loop) and record each one's timestamps."""
    out: list[Sample] = []
    rng = random.Random(0)
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30.0) as client:

        async def one(endpoint: str, path: str, params: dict[str, Any] | None, scheduled: float) -> None:
            sent: list[float] = []

            async def trace(name: str, _info: dict[str, Any]) -> None:
                if name == "http11.send_request_headers.started":
                    sent.append(time.perf_counter())

            called = time.perf_counter()
            try:
                status = (await client.get(path, params=params, extensions={"trace": trace})).status_code
            except httpx.HTTPError:
                status = 0
            done = time.perf_counter()
            out.append(Sample(endpoint, scheduled, called, sent[0] if sent else called, done, status))

        tasks = []
        t0 = time.perf_counter() + 0.05
        for i in range(int(rate * seconds)):
            scheduled = t0 + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if rng.random() < 0.5:
                args = ("job", f"/v1/fine_tuning/jobs/{job_id}", None)
            else:
                params = {"limit": 20, "after": rng.choice(event_ids)}
                args = ("events", f"/v1/fine_tuning/jobs/{job_id}/events", params)
            tasks.append(asyncio.create_task(one(*args, scheduled)))
        await asyncio.gather(*tasks)
    return out


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile in ms (values in s)."""
    s = sorted(values)
    return round(1000 * s[min(len(s) - 1, max(0, round(q / 100 * len(s)) - 1))], 2) if s else float("nan")


def summarize(samples: list[Sample]) -> dict[str, dict[str, Any]]:
    """Per endpoint and overall: counts, errors, achieved rate, latency / service / generator-lag percentiles."""
    out: dict[str, dict[str, Any]] = {}
    t0 = min(s.scheduled for s in samples)
    for name in ("job", "events", "all"):
        group = [s for s in samples if name in ("all", s.endpoint)]
        lat = [s.done - s.scheduled for s in group]
        svc = [s.done - s.sent for s in group]
        out[name] = {
            "count": len(group),
            "errors": sum(1 for s in group if not 200 <= s.status < 300),
            "statuses": {str(c): sum(1 for s in group if s.status == c) for c in sorted({s.status for s in group})},
            "achieved_rps": round(len(group) / (max(s.done for s in group) - t0), 1),
            "latency_ms": {f"p{q}": pct(lat, q) for q in (50, 90, 99)} | {"max": pct(lat, 100)},
            "service_ms": {f"p{q}": pct(svc, q) for q in (50, 90, 99)} | {"max": pct(svc, 100)},
            "pool_wait_ms_p99": pct([s.sent - s.called for s in group], 99),
            "generator_lag_ms_p99": pct([s.called - s.scheduled for s in group], 99),
        }
    # When the slow requests happened (seconds into the run): periodic clusters point at a background job,
    # scattered ones at contention.
    slow = sorted(s.scheduled - t0 for s in samples if s.done - s.scheduled > 0.05)
    out["all"]["slow_over_50ms_at_s"] = [round(x, 2) for x in slow]
    return out


def cpu_times(api_pid: int) -> dict[str, float] | None:
    """CPU seconds (user + system) of the API process, of every postgres process, and of this process."""
    try:
        import psutil
    except ImportError:
        return None
    pg = 0.0
    for p in psutil.process_iter(["name", "cpu_times"]):
        if p.info["name"] == "postgres" and p.info["cpu_times"]:
            pg += p.info["cpu_times"].user + p.info["cpu_times"].system
    root = psutil.Process(api_pid)
    api = 0.0
    for proc in [root, *root.children(recursive=True)]:  # uvicorn --workers N: the worker processes
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            api += t.user + t.system
    me = psutil.Process().cpu_times()
    return {"api": api, "postgres": pg, "generator": me.user + me.system}


def first_step(api: httpx.Client, worker: Proc, timeout: float = 600) -> dict[str, float]:
    """Wait for the worker, POST a 2-step job, poll every 50 ms; seconds POST→running→steps_done ≥ 1."""
    deadline = time.monotonic() + 300
    while "ready." not in worker.tail(200):
        if worker.popen.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not become ready:\n{worker.tail()}")
        time.sleep(0.2)
    t_post = time.perf_counter()
    job, post_s = submit(api, max_steps=2, checkpoint_interval=0)
    t_running = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()
        now = time.perf_counter()
        if t_running is None and j["status"] != "queued":
            t_running = now
        if j["steps_done"] >= 1 or j["status"] in ("failed", "cancelled"):
            if j["steps_done"] < 1:
                raise RuntimeError(f"job {j['status']}: {j.get('error')}\n{worker.tail()}")
            t_running = t_running or now
            r = {"post_s": post_s, "post_to_running_s": t_running - t_post, "running_to_first_step_s": now - t_running}
            return {k: round(v, 3) for k, v in r.items()} | {"post_to_first_step_s": round(now - t_post, 3)}
        time.sleep(0.05)
    raise TimeoutError(f"no first step within {timeout}s\n{worker.tail()}")


def empty_redis_db() -> tuple[str, Any]:
    """An empty Redis db (1..15) of our own, so the doorbell queue is ours alone and can be flushed afterwards."""
    import redis

    for db in random.sample(range(1, 16), 15):
        r = redis.Redis.from_url(f"{REDIS}/{db}")
        if r.dbsize() == 0:
            return f"{REDIS}/{db}", r
    raise RuntimeError("no empty Redis db in 1..15")


def print_report(result: dict[str, Any]) -> None:
    print(f"\n{'endpoint':8} {'count':>6} {'err':>4} {'req/s':>6}  latency ms p50/p90/p99/max   service ms p50/p99")
    for name, s in result["endpoints"].items():
        lat, svc = s["latency_ms"], s["service_ms"]
        print(
            f"{name:8} {s['count']:6d} {s['errors']:4d} {s['achieved_rps']:6.1f}  "
            f"{lat['p50']:7.1f} {lat['p90']:7.1f} {lat['p99']:7.1f} {lat['max']:7.1f}   "
            f"{svc['p50']:7.1f} {svc['p99']:7.1f}"
        )
    if cpu := result.get("cpu_per_wall_s"):
        print("CPU (cores busy): " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    if fs := result.get("first_step"):
        print(
            f"first step: POST→running {fs['post_to_running_s']:.2f} s + running→step 1 "
            f"{fs['running_to_first_step_s']:.2f} s = {fs['post_to_first_step_s']:.2f} s "
            f"(the POST itself {fs['post_s']:.3f} s)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=200.0, help="scheduled requests per second")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--quick", action="store_true", help="5 s of load")
    ap.add_argument("--first-step", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--keep-db", action="store_true", help="do not drop the database at the end")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    args = ap.parse_args()
    seconds = 5.0 if args.quick else args.seconds
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind through the finally below

    import psycopg

    state = Path(tempfile.mkdtemp(prefix="rft-load-"))
    (state / "logs").mkdir()
    db = f"rft_load_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{db}"')
    procs: list[Proc] = []
    redis_conn: Any = None
    ok = False
    try:
        db_url = f"{PG.replace('postgresql://', 'postgresql+psycopg://')}/{db}"
        migrate(db_url)
        redis_url, redis_conn = empty_redis_db()
        from tests.tiny_model import build_tiny_model

        with contextlib.redirect_stderr(io.StringIO()):  # transformers' "Writing model shards" progress bar
            build_tiny_model(state / "models", MODEL)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        token = secrets.token_hex(16)
        env = service_env(
            {
                "DATABASE_URL": db_url,
                "BROKER_URL": redis_url,
                "WORKER_TOKEN": token,
                "STATE_DIR": str(state),
                "MODEL_CATALOG_DIR": str(state / "models"),
                "API_URL": url,
                "RATE_LIMIT_PER_MINUTE": "0",
            }
        )
        env.pop("API_KEY", None)
        api_cmd = [*api_command(port), "--workers", str(args.workers), "--log-level", "warning", "--no-access-log"]
        procs.append(Proc("api", api_cmd, env, state / "logs"))
        wait_http(f"{url}/healthz", proc=procs[0].popen)
        with httpx.Client(base_url=url, timeout=60) as api:
            job_id, epoch, event_ids = seed(api, token)
            print(f"seeded {job_id} with {len(event_ids)} events; {args.rate:g} req/s for {seconds:g} s (+1 s warm-up)")
            asyncio.run(run_load(url, job_id, event_ids, args.rate, 1.0))
            load = os.getloadavg()  # the machine may be shared: a busy one shows here
            before, t = cpu_times(procs[0].popen.pid), time.perf_counter()
            samples = asyncio.run(run_load(url, job_id, event_ids, args.rate, seconds))
            after, wall = cpu_times(procs[0].popen.pid), time.perf_counter() - t
            rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
            config = {
                "rate": args.rate,
                "seconds": seconds,
                "pool": 32,
                "uvicorn_workers": args.workers,
                "db": "postgresql",
            }
            result: dict[str, Any] = {
                "config": config | {"events_seeded": len(event_ids), "git_rev": rev, "loadavg_before": load},
                "endpoints": summarize(samples),
            }
            if before and after:
                result["cpu_per_wall_s"] = {k: round((after[k] - before[k]) / wall, 3) for k in before}
            if args.first_step:
                # Finish the seed job as its worker would, so the new worker drops its doorbell quietly.
                api.post(
                    f"/internal/jobs/{job_id}/finish",
                    json={"epoch": epoch, "status": "cancelled"},
                    headers={"Authorization": f"Bearer {token}"},
                ).raise_for_status()
                procs.append(Proc("worker", worker_command(f"bench{port}@%h"), env, state / "logs"))
                result["first_step"] = first_step(api, procs[1])
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"api_load-{time.strftime('%Y%m%d-%H%M%S')}.json"
        path.write_text(json.dumps(result, indent=2) + "\n")
        print_report(result)
        print(f"\nwrote {path.relative_to(ROOT)}")
        ok = True
    finally:
        for p in reversed(procs):
            p.stop()
        if not ok:
            print("\n".join(f"--- {p.name} ({p.log}) ---\n{p.tail()}" for p in procs), file=sys.stderr)
        if redis_conn is not None:
            redis_conn.flushdb()
        if not args.keep_db:
            with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        if args.keep_db:
            print(f"kept database {db}", file=sys.stderr)
        if ok:
            shutil.rmtree(state, ignore_errors=True)
        else:
            print(f"kept {state} (logs)", file=sys.stderr)


if __name__ == "__main__":
    main()
