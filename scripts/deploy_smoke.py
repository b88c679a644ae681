"""``make test-deploy``: the built images run as containers against this machine's services, and a job succeeds.

What runs, each a container of the images ``make images`` built (host network, so the containers reach the
machine's PostgreSQL and Redis and a moto S3 server started here; the compose file's postgres/redis/minio images
come from registries this machine cannot reach, so the machine's services stand in for them):

1. the one-shot migration (the API image running ``alembic upgrade head``) on a fresh database;
2. the API (the image's own CMD on another port), until ``/readyz`` answers;
3. a CPU worker (the worker image, its own CMD) with the sandbox settings of docker-compose.yml / the Kubernetes
   security context, until its health check (a Celery ping) passes;
4. a 3-step GRPO job on a tiny model mounted read-only at /models, with a python grader that runs in the worker
   container's bubblewrap sandbox, driven through the containerised API to ``succeeded``; its adapter is
   downloaded from S3 through the API's link and unpacked.

Every container is removed at the end, whatever happened; their logs are kept in ``.state/deploy-smoke/``.
Exits non-zero with the step that failed and the containers' last log lines.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.local_stack import BIN, Proc, free_port, wait_http  # noqa: E402
from tests.helpers import ARITH_ROWS, PY_GRADER  # noqa: E402  (the integration tests' data and python grader)

OUT = ROOT / ".state" / "deploy-smoke"
# docker-compose.yml's x-sandbox: bubblewrap needs namespaces and a fresh /proc; no capability, no privilege gain
SANDBOX_OPTS = [
    "--security-opt=no-new-privileges",
    "--security-opt=seccomp=unconfined",
    "--security-opt=apparmor=unconfined",
    "--security-opt=systempaths=unconfined",
    "--cap-drop=ALL",
]


class Failed(RuntimeError):
    pass


def engine() -> str:
    for name in ("docker", "podman"):
        if shutil.which(name) and subprocess.run([name, "info"], capture_output=True).returncode == 0:
            return name
    raise Failed("neither docker nor podman runs here: run `make images` first (it installs Podman)")


class Containers:
    """Containers started here, removed at the end; their logs saved first."""

    def __init__(self, cli: str, prefix: str) -> None:
        self.cli, self.prefix = cli, prefix
        self.names: list[str] = []

    def run(self, name: str, image: str, args: list[str], command: list[str] | None = None, detach: bool = True) -> str:
        full = f"{self.prefix}-{name}"
        self.names.append(full)
        argv = [self.cli, "run", "--name", full, "--network=host", *args, image, *(command or [])]
        if detach:
            argv.insert(2, "-d")
        out = subprocess.run(argv, capture_output=True, text=True)
        if out.returncode != 0:
            raise Failed(f"{name}: `{' '.join(argv[:4])} … {image}` exited {out.returncode}\n{out.stdout}{out.stderr}")
        return out.stdout

    def logs(self, name: str, tail: int = 40) -> str:
        out = subprocess.run([self.cli, "logs", "--tail", str(tail), f"{self.prefix}-{name}"], capture_output=True)
        return (out.stdout + out.stderr).decode("utf-8", "replace")

    def running(self, name: str) -> bool:
        out = subprocess.run(
            [self.cli, "inspect", "-f", "{{.State.Running}}", f"{self.prefix}-{name}"], capture_output=True, text=True
        )
        return out.stdout.strip() == "true"

    def exec(self, name: str, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.cli, "exec", f"{self.prefix}-{name}", *command], capture_output=True, text=True)

    def close(self) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        for full in self.names:
            logs = subprocess.run([self.cli, "logs", full], capture_output=True)
            (OUT / f"{full}.log").write_bytes(logs.stdout + logs.stderr)
            subprocess.run([self.cli, "rm", "-f", full], capture_output=True)


@contextmanager
def fresh_database() -> Iterator[str]:
    name = f"rft_deploy_{secrets.token_hex(4)}"
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        subprocess.run(
            ["psql", "-h", "127.0.0.1", "-U", "postgres", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
            capture_output=True,
        )


@contextmanager
def moto_server() -> Iterator[str]:
    port = free_port()
    OUT.mkdir(parents=True, exist_ok=True)
    proc = Proc("moto", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], dict(os.environ), OUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url, proc=proc.popen)
        import boto3

        boto3.client(
            "s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
        ).create_bucket(Bucket="rft-deploy")
        yield url
    finally:
        proc.stop()


def tiny_catalog() -> Path:
    """A catalog folder with the tests' tiny random model (built on the host; mounted read-only at /models)."""
    from tests.tiny_model import TINY_ID, build_tiny_model

    root = OUT / "models"
    build_tiny_model(root)
    for p in [root, *root.rglob("*")]:  # the containers run as uid 10001
        p.chmod(0o755 if p.is_dir() else 0o644)
    assert (root / TINY_ID / "config.json").is_file()
    return root


def port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def health_command(cli: str, image: str) -> list[str]:
    """The image's own HEALTHCHECK command (run with exec: Podman without systemd does not schedule it)."""
    out = subprocess.run(
        [cli, "image", "inspect", "--format", "{{json .Config.Healthcheck}}", image], capture_output=True, text=True
    )
    test = json.loads(out.stdout or "null") if out.returncode == 0 else None
    if not test or not test.get("Test"):
        raise Failed(f"{image} has no HEALTHCHECK (Podman keeps it only with --format docker)")
    kind, *command = test["Test"]
    return ["/bin/sh", "-c", command[0]] if kind == "CMD-SHELL" else command


def wait(what: str, check: Any, timeout: float, containers: Containers, names: list[str]) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if check():
            return time.monotonic() - t0
        for n in names:
            if not containers.running(n):
                raise Failed(f"{what}: the {n} container exited\n{containers.logs(n)}")
        time.sleep(1)
    raise Failed(f"{what}: not within {timeout:.0f} s\n" + "\n".join(containers.logs(n) for n in names))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--api-image", default=os.environ.get("RFT_API_IMAGE", "localhost/rft-api:0.1.0"))
    p.add_argument("--worker-image", default=os.environ.get("RFT_WORKER_IMAGE", "localhost/rft-worker:0.1.0-cpu"))
    args = p.parse_args()
    t_start = time.monotonic()
    figures: dict[str, float] = {}
    cli = engine()
    subprocess.run(["bash", str(ROOT / "scripts" / "services.sh")], check=True)
    containers = Containers(cli, f"rft-smoke-{secrets.token_hex(3)}")
    with ExitStack() as stack:
        stack.callback(containers.close)
        pg_url = stack.enter_context(fresh_database())
        s3_url = stack.enter_context(moto_server())
        catalog = tiny_catalog()
        api_port = 8000 if port_free(8000) else free_port()  # the image's own port unless something holds it
        env = {
            "DATABASE_URL": pg_url,
            "BROKER_URL": f"redis://127.0.0.1:6379/{9 + secrets.randbelow(6)}",
            "S3_ENDPOINT_URL": s3_url,
            "S3_BUCKET": "rft-deploy",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "API_URL": f"http://127.0.0.1:{api_port}",
            "WORKER_TOKEN": secrets.token_hex(16),
            "MODEL_CATALOG_DIR": "/models",
            "STATE_DIR": "/tmp/rft-state",
            "WORK_DIR": "/tmp/rft-work",
            "REWARD_SANDBOX": "auto",
            "OMP_NUM_THREADS": "1",
        }
        env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        models = ["-v", f"{catalog}:/models:ro"]

        t = time.monotonic()
        containers.run("migrate", args.api_image, env_args, ["alembic", "upgrade", "head"], detach=False)
        figures["migrate_s"] = time.monotonic() - t

        t = time.monotonic()
        # the image's CMD (port 8000), or the same uvicorn on a free port when 8000 is taken on this machine
        api_cmd = None
        if api_port != 8000:
            api_cmd = ["uvicorn", "--factory", "api.main:create_app", "--host", "127.0.0.1", "--port", str(api_port)]
        containers.run("api", args.api_image, [*env_args, *models, *SANDBOX_OPTS], api_cmd)
        url = f"http://127.0.0.1:{api_port}"
        api_check = [part.replace(":8000/", f":{api_port}/") for part in health_command(cli, args.api_image)]

        def ready() -> bool:
            return containers.exec("api", api_check).returncode == 0

        wait("the API image's HEALTHCHECK (GET /readyz)", ready, 120, containers, ["api"])
        figures["api_ready_s"] = time.monotonic() - t

        t = time.monotonic()
        containers.run("worker", args.worker_image, [*env_args, *models, *SANDBOX_OPTS, "--shm-size=1g"])

        check = health_command(cli, args.worker_image)

        def worker_healthy() -> bool:
            return containers.exec("worker", check).returncode == 0

        wait(f"the worker image's HEALTHCHECK ({check[-1]})", worker_healthy, 300, containers, ["worker", "api"])
        figures["worker_ready_s"] = time.monotonic() - t

        t = time.monotonic()
        with httpx.Client(base_url=url, timeout=60) as api:
            body = "\n".join(json.dumps(r) for r in ARITH_ROWS)
            f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", body)})
            if f.status_code != 201:
                raise Failed(f"upload: {f.status_code} {f.text}")
            hp = {"group_size": 4, "batch_size": 2, "max_steps": 3, "max_completion_tokens": 6, "learning_rate": 1e-3}
            job_body = {
                "model": "tiny-llama",
                "training_file": f.json()["id"],
                "method": {"type": "reinforcement", "reinforcement": {"grader": PY_GRADER, "hyperparameters": hp}},
            }
            r = api.post("/v1/fine_tuning/jobs", json=job_body)
            if r.status_code != 201:
                raise Failed(f"job creation: {r.status_code} {r.text}")
            job_id = r.json()["id"]

            def done() -> bool:
                return api.get(f"/v1/fine_tuning/jobs/{job_id}").json()["status"] in (
                    "succeeded",
                    "failed",
                    "cancelled",
                )

            wait(f"job {job_id}", done, 600, containers, ["worker", "api"])
            job = api.get(f"/v1/fine_tuning/jobs/{job_id}").json()
            events = api.get(f"/v1/fine_tuning/jobs/{job_id}/events", params={"limit": 100}).json()["data"]
            messages = [e["message"] for e in reversed(events)]
            if job["status"] != "succeeded":
                raise Failed(f"job {job_id} {job['status']}: {job.get('error')}\n" + "\n".join(messages[-15:]))
            if not any(m.startswith("Python graders run in the bwrap sandbox") for m in messages):
                raise Failed("the worker did not say its python graders run in bubblewrap:\n" + "\n".join(messages))
            figures["job_s"] = time.monotonic() - t
            ckpts = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"]
            resp = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints/{ckpts[0]['id']}/content")
            if resp.status_code == 302:  # a presigned S3 URL
                resp = httpx.get(resp.headers["location"], timeout=30)
            with tarfile.open(fileobj=io.BytesIO(resp.content)) as tar:
                names = sorted(tar.getnames())
            if names != ["adapter_config.json", "adapter_model.safetensors"]:
                raise Failed(f"the downloaded adapter holds {names}")
    figures["total_s"] = time.monotonic() - t_start
    print("deploy smoke test passed: " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    print(f"job {job_id}: {len(messages)} events, adapter {names}; container logs in {OUT}")
    (OUT / "figures.json").write_text(json.dumps({k: round(v, 1) for k, v in figures.items()}, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failed as exc:
        print(f"deploy smoke test FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
