"""Soak: SIGKILL the training process again and again at random steps; count lost jobs and duplicated steps.

    .venv/bin/python -m bench.soak_kill [--kills 20] [--kills-per-job 4] [--steps 30] [--seed 0]

Runs the production shape on this machine — a fresh PostgreSQL database, a Redis db, a moto S3 server, the API
(uvicorn, with its reaper) and one Celery worker — on the tiny test model. Each job trains ``--steps`` steps
with a checkpoint every 2; while it runs, the Celery pool child that trains is killed with SIGKILL when the job
reaches a random step, ``--kills-per-job`` times. Prints per kill the recovery time (kill -> next step recorded)
and at the end: jobs lost (not succeeded), duplicated or missing steps, mean and max recovery. Needs the
services `make test` uses (scripts/services.sh). Not part of `make test`: 20 kills take a few minutes.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import signal
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tests.helpers import migrate
from tests.integration.flow import all_events, submit
from tests.integration.stack import Stack, moto_s3
from tests.tiny_model import build_tiny_model

PG = os.environ.get("RFT_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
REDIS = os.environ.get("RFT_TEST_REDIS", "redis://127.0.0.1:6379")


def _steps_done(api: httpx.Client, job_id: str) -> int:
    return api.get(f"/v1/fine_tuning/jobs/{job_id}").json()["steps_done"]


def soak(api: httpx.Client, stack: Stack, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    recoveries: list[float] = []
    lost, duplicated, missing, kills = 0, 0, 0, 0
    while kills < args.kills:
        job = submit(api, max_steps=args.steps, checkpoint_interval=2)
        targets = sorted(rng.sample(range(2, args.steps - 1), min(args.kills_per_job, args.kills - kills)))
        for target in targets:
            while _steps_done(api, job["id"]) < target:
                time.sleep(0.05)
            pids = stack.training_pids()
            if not pids:
                continue
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed_at, at_step = time.monotonic(), _steps_done(api, job["id"])
            while _steps_done(api, job["id"]) <= at_step and time.monotonic() - killed_at < 300:
                time.sleep(0.05)
            recoveries.append(time.monotonic() - killed_at)
            kills += 1
            print(f"kill {kills:>2}: job {job['id'][-6:]} at step {at_step}, recovered in {recoveries[-1]:.1f} s")
        deadline = time.monotonic() + 600
        while api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["status"] not in ("succeeded", "failed", "cancelled"):
            assert time.monotonic() < deadline, stack.logs()
            time.sleep(0.2)
        done = api.get(f"/v1/fine_tuning/jobs/{job['id']}").json()
        steps = [e["data"]["step"] for e in all_events(api, job["id"]) if e["type"] == "metrics"]
        lost += done["status"] != "succeeded"
        duplicated += len(steps) - len(set(steps))
        missing += len(set(range(1, args.steps + 1)) - set(steps))
        print(f"job {job['id'][-6:]}: {done['status']}, {len(steps)} metrics events for {args.steps} steps")
    print(
        f"\n{kills} kills: jobs lost {lost}, duplicated steps {duplicated}, missing steps {missing}, "
        f"recovery mean {statistics.mean(recoveries):.1f} s, max {max(recoveries):.1f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--kills-per-job", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import boto3
    import psycopg
    import redis

    work = Path(tempfile.mkdtemp(prefix="rft-soak-"))
    name = f"rft_soak_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    pg_url = f"{PG.replace('postgresql://', 'postgresql+psycopg://')}/{name}"
    migrate(pg_url)
    redis_url = f"{REDIS}/{1 + secrets.randbelow(15)}"
    redis.Redis.from_url(redis_url).flushdb()
    try:
        with moto_s3(work) as endpoint:
            boto3.client(
                "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
            ).create_bucket(Bucket="soak")
            env = {
                "DATABASE_URL": pg_url,
                "BROKER_URL": redis_url,
                "S3_ENDPOINT_URL": endpoint,
                "S3_BUCKET": "soak",
                "AWS_ACCESS_KEY_ID": "x",
                "AWS_SECRET_ACCESS_KEY": "x",
                "MODEL_CATALOG_DIR": str(build_tiny_model(work / "models").parent),
                "STATE_DIR": str(work / "state"),
                "WORKER_TOKEN": secrets.token_hex(16),
                "LEASE_SECONDS": "5",
                "REAPER_INTERVAL_SECONDS": "1",
                "MAX_ATTEMPTS": str(args.kills_per_job + 2),
            }
            stack = Stack(env, work)
            stack.start_api()
            stack.start_worker()
            try:
                with httpx.Client(base_url=stack.url, timeout=30) as api:
                    soak(api, stack, args)
            finally:
                stack.stop()
    finally:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
