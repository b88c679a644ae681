"""Load benchmark of the public API: open-loop status polls and event pages against one uvicorn on PostgreSQL.

    .venv/bin/python -m bench.api_load [--rate 200] [--seconds 20] [--repeat N] [--find-rate [--max-p99 50]]
        [--profile out.svg|out.json] [--api-root DIR] [--access-log] [--quick] [--no-first-step] [--keep-db]

What runs: one uvicorn process (``--workers 1``, log level warning, no access log unless ``--access-log``, which
logs a JSON line per request as the deployed API does, to a file here) on a fresh PostgreSQL database
built by ``alembic upgrade head`` (dropped at the end so every run starts from the same near-empty tables and
nothing piles up on the shared server; ``--keep-db`` keeps it to inspect), an empty Redis db as the broker
(flushed at the end) and a temporary STATE_DIR holding the object store and the tiny test model. ``--api-root``
runs the API from another checkout (a ``git worktree`` of an older commit): a before/after comparison with the
same generator, database and machine.

Seed: one job, created with no worker running, then claimed through the internal worker API with WORKER_TOKEN
(the real path: events need a live lease) and given 200 per-step metrics events shaped like the worker's, so it
looks like a job mid-run (steps_done 200/1000) — the state in which users poll.

Load: requests are *scheduled* every 1/rate s whatever the answers do (open loop). ``latency`` runs from the
scheduled time to the end of the response, so a stalled server or a full connection pool counts against it
(no coordinated omission); ``service`` runs from the moment the request is written to its connection to the
response. 50% GET /v1/fine_tuning/jobs/{id}, 50% GET …/events?limit=20&after=<random event id>; 1 s of warm-up at
the same rate is discarded. The client is a small HTTP/1.1 one over asyncio streams on uvloop (``Client``), at
most 32 connections: on a 2-core machine the generator shares the cores with what it measures, and httpx's
AsyncClient cost it 2.7–3.5 ms of CPU a request against 0.5 ms for this one (back to back at 100 req/s).

Each window reports the CPU each side used per wall second and per request (psutil, user + system): the API
process, the Postgres backends serving the bench's database (not the shared server's other databases), and this
generator; and how many Postgres sessions were opened during the window (a pool that closes and reopens
connections shows here). ``--repeat N`` measures N windows in a row; ``--find-rate`` then searches the highest
rate whose window has p99 < ``--max-p99`` ms (up by 25 % until a window fails, then three halvings of the gap;
one window a rate, so the answer is as noisy as one p99); ``--profile`` records the API with py-spy during the
first window (``pip install py-spy``; .svg: a flame graph, .json: speedscope).

First step (default; ``--no-first-step`` skips it): a Celery worker is started as ``make test`` starts it
(scripts.local_stack.worker_command) and awaited until it logs ``ready``; then a 2-step job on the tiny model
with a string_check grader is POSTed and polled every 50 ms: POST→running (the doorbell through Redis, the claim)
and running→steps_done ≥ 1 (model and data load plus one GRPO step) — what a user waits before the first metric.

Pitfalls: RATE_LIMIT_PER_MINUTE is set to 0 here (the default 600/min per key would answer 429 past 10 req/s);
the service runs in open mode (no API_KEY, no project key); WORKER_TOKEN is required once DATABASE_URL is set.
The machine may be shared: each window prints the load average before it, and only figures measured in the same
conditions (the same run, or runs back to back) compare.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
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
import urllib.parse
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
POOL = 32  # connections at most, as a client library's pool


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


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one response (Content-Length or chunked body); (status, whether the connection stays open)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip().lower()
    if b"content-length" in fields:
        await reader.readexactly(int(fields[b"content-length"]))
    elif fields.get(b"transfer-encoding") == b"chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readexactly(2)
    return status, fields.get(b"connection") != b"close"


class Client:
    """A lean HTTP/1.1 GET client: at most ``size`` requests at once, each on an idle keep-alive connection when
    there is one (the most recently used first), else on a new one.

    Not httpx: its AsyncClient cost this generator 2.7–3.5 ms of CPU a request on this 2-core machine, CPU taken
    from the server it measures; this costs 0.5 ms (back to back at 100 req/s, 2026-11-25). A connection the
    server closed while idle (uvicorn's keep-alive timeout) is replaced once.
    """

    def __init__(self, host: str, port: int, size: int) -> None:
        self.host, self.port = host, port
        self.slots = asyncio.Semaphore(size)
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def get(self, target: str) -> tuple[int, float]:
        """(status, when the request went on the wire), once the whole body has been read."""
        request = f"GET {target} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n\r\n".encode()
        async with self.slots:
            conn = self.idle.pop() if self.idle else None
            for attempt in (1, 2):
                if conn is None:
                    conn = await asyncio.open_connection(self.host, self.port)
                reader, writer = conn
                sent = time.perf_counter()
                try:
                    writer.write(request)
                    status, keep = await _read_response(reader)
                except (ConnectionError, asyncio.IncompleteReadError):
                    writer.close()
                    conn = None
                    if attempt == 2:
                        raise
                    continue
                if keep:
                    self.idle.append(conn)
                else:
                    writer.close()
                return status, sent
        raise AssertionError("unreachable")

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


def run_load(url: str, job_id: str, event_ids: list[str], rate: float, seconds: float) -> list[Sample]:
    """Fire rate*seconds requests at fixed scheduled times (open loop) and record each one's timestamps.

    The collector is off in this process while it fires: it holds torch and transformers (the tiny model's
    build), and a full pass over them stalled the generator ~0.3 s in the first window of every run (requests
    sent 300 ms after their time, which the latency counts against the API)."""
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(_load(url, job_id, event_ids, rate, seconds))
    finally:
        gc.enable()
        gc.unfreeze()


async def _load(url: str, job_id: str, event_ids: list[str], rate: float, seconds: float) -> list[Sample]:
    out: list[Sample] = []
    rng = random.Random(0)
    split = urllib.parse.urlsplit(url)
    client = Client(split.hostname or "127.0.0.1", split.port or 80, POOL)

    async def one(endpoint: str, target: str, scheduled: float) -> None:
        called = time.perf_counter()
        try:
            status, sent = await asyncio.wait_for(client.get(target), 30.0)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            status, sent = 0, called
        out.append(Sample(endpoint, scheduled, called, sent, time.perf_counter(), status))

    tasks = []
    t0 = time.perf_counter() + 0.05
    for i in range(int(rate * seconds)):
        scheduled = t0 + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if rng.random() < 0.5:
            args = ("job", f"/v1/fine_tuning/jobs/{job_id}")
        else:
            args = ("events", f"/v1/fine_tuning/jobs/{job_id}/events?limit=20&after={rng.choice(event_ids)}")
        tasks.append(asyncio.create_task(one(*args, scheduled)))
    await asyncio.gather(*tasks)
    client.close()
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


def cpu_snapshot(api_pid: int, db: str) -> dict[str, Any] | None:
    """CPU seconds (user + system) so far of the API process (and its children), of each Postgres backend serving
    the bench's database (not the other databases of a shared server) and of this process, the load generator;
    and how many sessions that database has had."""
    try:
        import psutil
    except ImportError:
        return None
    import psycopg

    def used(proc: Any) -> float:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            return float(t.user + t.system)
        return 0.0

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        pids = [pid for (pid,) in admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (db,))]
        row = admin.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s", (db,)).fetchone()
    root = psutil.Process(api_pid)
    return {
        "api": sum(used(p) for p in [root, *root.children(recursive=True)]),
        "postgres": {pid: used(psutil.Process(pid)) for pid in pids if psutil.pid_exists(pid)},
        "generator": used(psutil.Process()),
        "sessions": row[0] if row else 0,
    }


def cpu_used(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """CPU seconds each side used between two snapshots. A backend that ended in between (a connection the pool
    closed) takes its share with it: ``pg_sessions_opened`` says how often that can have happened."""
    pg = sum(t - before["postgres"].get(pid, 0.0) for pid, t in after["postgres"].items())
    return {"api": after["api"] - before["api"], "postgres": pg, "generator": after["generator"] - before["generator"]}


@dataclass
class Target:
    """What a measurement window needs: the API's address and process, the seeded job, the bench's database."""

    url: str
    api_pid: int
    job_id: str
    event_ids: list[str]
    db: str


def measure(t: Target, rate: float, seconds: float, profile: Path | None = None) -> dict[str, Any]:
    """One window of open-loop load at ``rate``: latency percentiles per endpoint and the CPU split per wall second
    (with py-spy recording the API process meanwhile when ``profile`` names an output file)."""
    load = os.getloadavg()  # the machine may be shared: a busy one shows here
    spy = None
    if profile is not None:
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--nonblocking",
                "--rate",
                "200",
                "--pid",
                str(t.api_pid),
                "--duration",
                str(int(seconds)),
                "--output",
                str(profile),
                "--format",
                "speedscope" if profile.suffix == ".json" else "flamegraph",
            ],
            stdout=subprocess.DEVNULL,
        )
    before, start = cpu_snapshot(t.api_pid, t.db), time.perf_counter()
    samples = run_load(t.url, t.job_id, t.event_ids, rate, seconds)
    after, wall = cpu_snapshot(t.api_pid, t.db), time.perf_counter() - start
    if spy is not None:
        spy.wait()
    out: dict[str, Any] = {"rate": rate, "seconds": seconds, "loadavg_before": load, "endpoints": summarize(samples)}
    if before and after:
        used = cpu_used(before, after)
        out["cpu_per_wall_s"] = {k: round(v / wall, 3) for k, v in used.items()}
        out["cpu_ms_per_request"] = {k: round(1000 * v / len(samples), 3) for k, v in used.items()}
        out["pg_sessions_opened"] = after["sessions"] - before["sessions"]
    return out


def find_rate(t: Target, start: float, seconds: float, p99_ms: float) -> dict[str, Any]:
    """The highest rate whose window has p99 < ``p99_ms`` and no errors: up by 25 % from ``start`` until a
    window fails, then halve the gap three times (each rate measured once: the verdict is as noisy as one p99)."""

    def ok(r: dict[str, Any]) -> bool:
        a = r["endpoints"]["all"]
        return a["errors"] == 0 and a["latency_ms"]["p99"] < p99_ms

    tried: list[dict[str, Any]] = []

    def window(rate: float) -> bool:
        r = measure(t, round(rate), seconds)
        tried.append(r)
        a = r["endpoints"]["all"]
        print(f"  {r['rate']:6.0f} req/s: p99 {a['latency_ms']['p99']:7.1f} ms, {a['errors']} errors", flush=True)
        return ok(r)

    good, bad = 0.0, None
    rate = start
    while bad is None:
        if window(rate):
            good, rate = rate, rate * 1.25
        else:
            bad = rate
        if rate > 5000:
            break
    for _ in range(3):
        if bad is None or bad - good < 5:
            break
        mid = (good + bad) / 2
        if window(mid):
            good = mid
        else:
            bad = mid
    return {"p99_bound_ms": p99_ms, "highest_rate": round(good), "windows": tried}


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


def print_window(w: dict[str, Any]) -> None:
    print(f"\n{'endpoint':8} {'count':>6} {'err':>4} {'req/s':>6}  latency ms p50/p90/p99/max   service ms p50/p99")
    for name, e in w["endpoints"].items():
        lat, svc = e["latency_ms"], e["service_ms"]
        print(
            f"{name:8} {e['count']:6d} {e['errors']:4d} {e['achieved_rps']:6.1f}  "
            f"{lat['p50']:7.1f} {lat['p90']:7.1f} {lat['p99']:7.1f} {lat['max']:7.1f}   "
            f"{svc['p50']:7.1f} {svc['p99']:7.1f}"
        )
    if cpu := w.get("cpu_per_wall_s"):
        per = w["cpu_ms_per_request"]
        print(
            "CPU, cores busy (ms a request): "
            + ", ".join(f"{k} {v:.2f} ({per[k]:.2f})" for k, v in cpu.items())
            + f"; Postgres sessions opened {w['pg_sessions_opened']}; load average {w['loadavg_before'][0]:.2f}"
        )


def print_first_step(fs: dict[str, float]) -> None:
    print(
        f"first step: POST→running {fs['post_to_running_s']:.2f} s + running→step 1 "
        f"{fs['running_to_first_step_s']:.2f} s = {fs['post_to_first_step_s']:.2f} s "
        f"(the POST itself {fs['post_s']:.3f} s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=200.0, help="scheduled requests per second")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each measured window")
    ap.add_argument("--quick", action="store_true", help="5 s windows")
    ap.add_argument("--repeat", type=int, default=1, help="measured windows at --rate, one after the other")
    ap.add_argument("--find-rate", action="store_true", help="then search the highest rate with p99 < --max-p99")
    ap.add_argument("--max-p99", type=float, default=50.0, help="the p99 bound of --find-rate, in ms")
    ap.add_argument("--profile", type=Path, help="py-spy record the API during the first window (.svg or .json)")
    ap.add_argument("--api-root", type=Path, help="run the API from this checkout (a before/after comparison)")
    ap.add_argument("--first-step", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--keep-db", action="store_true", help="do not drop the database at the end")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    ap.add_argument(
        "--access-log", action="store_true", help="uvicorn's access log on, at level info, as deployed (JSON lines)"
    )
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
        api_cmd = [*api_command(port), "--workers", str(args.workers)]
        api_cmd += ["--log-level", "info"] if args.access_log else ["--log-level", "warning", "--no-access-log"]
        api_root = (args.api_root or ROOT).resolve()
        if args.api_root:
            api_cmd += ["--app-dir", str(api_root)]
            env["PYTHONPATH"] = str(api_root)
        procs.append(Proc("api", api_cmd, env, state / "logs"))
        wait_http(f"{url}/healthz", proc=procs[0].popen)
        with httpx.Client(base_url=url, timeout=60) as api:
            job_id, epoch, event_ids = seed(api, token)
            target = Target(url, procs[0].popen.pid, job_id, event_ids, db)
            print(f"seeded {job_id} with {len(event_ids)} events; {args.rate:g} req/s for {seconds:g} s (+1 s warm-up)")
            run_load(url, job_id, event_ids, args.rate, 1.0)
            windows = []
            for i in range(args.repeat):
                windows.append(measure(target, args.rate, seconds, args.profile if i == 0 else None))
                print_window(windows[-1])
            rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=api_root, capture_output=True, text=True)
            result: dict[str, Any] = {
                "config": {
                    "rate": args.rate,
                    "seconds": seconds,
                    "pool": POOL,
                    "uvicorn_workers": args.workers,
                    "access_log": args.access_log,
                    "db": "postgresql",
                    "events_seeded": len(event_ids),
                    "api_root": str(api_root),
                    "git_rev": rev.stdout.strip(),
                },
                "windows": windows,
            }
            if args.find_rate:
                print(f"\nthe highest rate with p99 < {args.max_p99:g} ms, {seconds:g} s windows:")
                result["find_rate"] = found = find_rate(target, args.rate, seconds, args.max_p99)
                print(f"highest rate with p99 < {args.max_p99:g} ms: {found['highest_rate']} req/s")
            if args.first_step:
                # Finish the seed job as its worker would, so the new worker drops its doorbell quietly.
                api.post(
                    f"/internal/jobs/{job_id}/finish",
                    json={"epoch": epoch, "status": "cancelled"},
                    headers={"Authorization": f"Bearer {token}"},
                ).raise_for_status()
                procs.append(Proc("worker", worker_command(f"bench{port}@%h"), env, state / "logs"))
                result["first_step"] = first_step(api, procs[1])
                print_first_step(result["first_step"])
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"api_load-{time.strftime('%Y%m%d-%H%M%S')}.json"
        path.write_text(json.dumps(result, indent=2) + "\n")
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
