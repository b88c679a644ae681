"""Project secrets on real services (Postgres, Redis, moto's S3, the API and a Celery worker process, the real W&B
client): project A keeps its W&B key as the secret "wandb" and its job names it; project B's job names none, on the
same worker process right after A's. W&B runs online against a stand-in W&B server on loopback (WANDB_BASE_URL),
which records what the client sends.

Which key a run used: wandb 0.31 writes the key into none of a run's files (the run file, its settings and debug
logs hold only the host), so the evidence is what the W&B client itself sends for that run: every request naming
A's run id carries ``Authorization: Basic base64("api:" + A's key)``; B's carries the worker's own WANDB_API_KEY,
never A's (wandb would otherwise hand A's session key to the next run). The run files are read back too
(tests/integration/test_tracking.py's reader): each job's run is there, online, under its own id.

And nowhere else: the value is in no API response of either job (job, events, metrics, samples, checkpoints, the
secret itself), no line of the API's or the worker's log, no file under the state folder (the jobs' scratch space,
the W&B folder, the object store on disk), and A's python grader, which hunts for it from inside the sandbox
(environment, /proc of itself, its parent and every process it can see, every file under the state folder, /tmp),
finds nothing: it would score 1.0, and every reward stays 0.

A project's own judge the same way: A keeps a judge's key as the secret "judge" and its job's score_model grader
calls a stand-in OpenAI-compatible judge on loopback (``endpoint``, allowed by JUDGE_PRIVATE_ENDPOINTS) with it;
the judge answers 0.75 to that key only, so every reward being 0.75 says the key reached the judge on every call
and the hunting grader beside it found nothing. B naming "judge" is refused at creation, as if it never existed.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from scripts.local_stack import ROOT
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.stack import Stack, production_env, running_api, wait_status
from tests.integration.test_tracking import wandb_records
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MARK = "rftsecretvalue"  # every project secret of this test starts with it; the hunting grader looks for it


@dataclass
class WandbRequest:
    path: str
    operation: str | None
    variables: dict[str, Any]
    authorization: str | None

    def names(self, run_id: str) -> bool:
        return run_id in self.path or run_id in json.dumps(self.variables)


@dataclass
class FakeWandb:
    """A W&B server as far as a run needs one (upsert the run, presign its files, take its file stream), keeping
    every request with its Authorization header."""

    url: str = ""
    requests: list[WandbRequest] = field(default_factory=list)

    def keys_for(self, run_id: str) -> set[str]:
        """The API keys the client sent with the requests about ``run_id`` (Basic auth ``api:<key>``)."""
        out = set()
        for r in self.requests:
            if r.names(run_id) and r.authorization:
                out.add(base64.b64decode(r.authorization.split()[1]).decode().removeprefix("api:"))
        return out


def _serve(fake: FakeWandb) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            operation, variables, answer = None, {}, b"{}"
            if self.path.startswith("/graphql"):
                query = json.loads(body)
                found = re.search(r"(?:query|mutation)\s+(\w+)", query.get("query", ""))
                operation, variables = (found.group(1) if found else None), query.get("variables") or {}
                answer = json.dumps({"data": _graphql(operation, variables, fake.url)}).encode()
            fake.requests.append(WandbRequest(self.path, operation, variables, self.headers.get("authorization")))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_PUT = do_GET = do_POST

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _graphql(operation: str | None, v: dict[str, Any], url: str) -> dict[str, Any]:
    if operation == "UpsertBucket":
        project = {
            "id": "p1",
            "name": v.get("project") or "rft",
            "entity": {"id": "e1", "name": v.get("entity") or "e"},
        }
        bucket = {"id": "b1", "name": v.get("name"), "displayName": v.get("displayName") or v.get("name")}
        bucket |= {"description": "", "config": "{}", "sweepName": None, "historyLineCount": 0, "project": project}
        return {"upsertBucket": {"bucket": bucket, "inserted": True}}
    if operation == "CreateRunFiles":
        files = [{"name": f, "uploadUrl": f"{url}/upload/{f}"} for f in v.get("files", [])]
        return {"createRunFiles": {"runID": "b1", "uploadHeaders": [], "files": files}}
    return {}


# A python grader that hunts for any project secret of this test from inside the sandbox: 1.0 if it finds one.
HUNT = """
import glob, os

MARK = "rftsecret" + "value"  # put together here, so this source itself never holds it
PLACES = {places!r}


def _readable():
    yield "\\n".join(f"{{k}}={{v}}" for k, v in os.environ.items()).encode()
    procs = ["self", str(os.getppid())] + [p.split("/")[2] for p in glob.glob("/proc/[0-9]*")]
    for pid in procs:
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{{pid}}/{{name}}", "rb") as f:
                    yield f.read()
            except OSError:
                pass
    for place in PLACES:
        for folder, _, files in os.walk(place):
            for name in files:
                try:
                    with open(os.path.join(folder, name), "rb") as f:
                        yield f.read(1 << 22)
                except OSError:
                    pass


def grade(sample, item):
    return 1.0 if any(MARK.encode() in blob for blob in _readable()) else 0.0
"""


def hunting_grader(places: list[str]) -> dict[str, Any]:
    return {"type": "python", "name": "hunt", "source": HUNT.format(places=places)}


def places(state: Path) -> list[str]:
    """Where the grader looks: the service's whole state folder (the jobs' scratch space and W&B runs are in it),
    whatever /tmp and the working folder it gets."""
    return [str(state), str(state / "work"), str(state / "wandb"), "/tmp", "/proc/self/cwd"]


@dataclass
class FakeJudge:
    """An OpenAI-compatible judge: 0.75 for requests bearing ``key``, 401 for any other; keeps every request's
    Authorization header."""

    key: str = ""
    url: str = ""
    seen: list[str | None] = field(default_factory=list)


def _serve_judge(judge: FakeJudge) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            auth = self.headers.get("authorization")
            judge.seen.append(auth)
            ok = self.path == "/v1/chat/completions" and auth == f"Bearer {judge.key}"
            reply = {"choices": [{"message": {"role": "assistant", "content": "Score: 0.75"}}]}
            answer = json.dumps(reply if ok else {"error": {"message": "unauthorized"}}).encode()
            self.send_response(200 if ok else 401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    judge.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@dataclass
class Fleet:
    stack: Stack
    state: Path
    wandb: FakeWandb
    worker_key: str
    judge: FakeJudge

    def project(self, name: str) -> httpx.Client:
        """A new project and a client holding its key (``python -m api.admin``, as an operator does)."""

        def admin(*args: str) -> str:
            out = subprocess.run(
                [sys.executable, "-m", "api.admin", *args], env=self.stack.env, cwd=ROOT, capture_output=True, text=True
            )
            assert out.returncode == 0, out.stderr
            return out.stdout.strip()

        key = admin("keys", "create", "--project", admin("projects", "create", name))
        return httpx.Client(base_url=self.stack.url, timeout=30, headers={"Authorization": f"Bearer {key}"})


@pytest.fixture(scope="module")
def fleet(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    state = tmp_path_factory.mktemp("secrets")
    fake, judge = FakeWandb(), FakeJudge()
    server, judge_server = _serve(fake), _serve_judge(judge)
    worker_key = "workerkey" + secrets.token_hex(20)  # the operator's own W&B key, on the worker
    try:
        with fresh_database() as pg_url, leased_redis_db() as broker:
            env = production_env(pg_url, broker, s3, catalog_dir, state)
            env |= {"SECRETS_KEY": Fernet.generate_key().decode(), "WANDB_BASE_URL": fake.url}
            env |= {"WANDB_API_KEY": worker_key, "JUDGE_PRIVATE_ENDPOINTS": "true"}  # the judge is on loopback
            with running_api(env, logs_dir) as stack:
                stack.start_worker()
                yield Fleet(stack, state, fake, worker_key, judge)
    finally:
        server.shutdown()
        judge_server.shutdown()


def run_job(
    fleet: Fleet, api: httpx.Client, integration: dict[str, Any] | None, grader: dict[str, Any] | None = None
) -> dict[str, Any]:
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("a.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    body = job_body(TINY_ID, f.json()["id"], grader=grader or hunting_grader(places(fleet.state)))
    body |= {"integrations": [integration]} if integration else {}
    created = api.post("/v1/fine_tuning/jobs", json=body)
    assert created.status_code == 201, created.text
    job = wait_status(api, created.json()["id"], {"succeeded", "failed", "cancelled"}, 300, fleet.stack)
    assert job["status"] == "succeeded", job
    return job


def job_responses(api: httpx.Client, job_id: str) -> list[httpx.Response]:
    """Everything the API tells the job's project about it."""
    url = f"/v1/fine_tuning/jobs/{job_id}"
    out = [api.get(url), api.get(f"{url}/events", params={"limit": 100}), api.get(f"{url}/metrics")]
    out += [api.get(f"{url}/samples", params={"step": step}) for step in (1, 2, 3)]
    out += [api.get(f"{url}/checkpoints"), api.get("/v1/secrets"), api.get(f"{url}/readiness")]
    assert all(r.status_code == 200 for r in out), [r.text for r in out if r.status_code != 200]
    return out


def test_a_projects_job_logs_with_its_own_key_which_nothing_else_can_read(fleet: Fleet) -> None:
    a, b = fleet.project("A"), fleet.project("B")
    value = MARK + secrets.token_hex(16)
    written = a.post("/v1/secrets", json={"name": "wandb", "value": value})
    assert written.status_code == 201 and value not in written.text, written.text
    control = fleet.state / "control"  # the hunt works: run here, beside a file holding the value, it scores 1.0
    control.mkdir()
    namespace: dict[str, Any] = {}
    exec(hunting_grader([str(control)])["source"], namespace)
    assert namespace["grade"]({}, {}) == 0.0
    (control / "leak.txt").write_text(value)
    assert namespace["grade"]({}, {}) == 1.0
    (control / "leak.txt").unlink()

    job_a = run_job(fleet, a, {"type": "wandb", "wandb": {"project": "team-a"}, "api_key_secret": "wandb"})
    job_b = run_job(fleet, b, {"type": "wandb", "wandb": {"project": "team-b"}})  # the same worker process, next

    run_a, run_b = f"{job_a['id']}-e1", f"{job_b['id']}-e1"
    assert fleet.wandb.keys_for(run_a) == {value}  # A's run: A's key, on every request about it
    assert fleet.wandb.keys_for(run_b) == {fleet.worker_key}  # B's: the worker's own, not A's left behind
    ops = {r.operation for r in fleet.wandb.requests if r.names(run_a)}
    assert {"UpsertBucket", "CreateRunFiles"} <= ops, ops
    for run_id, project in ((run_a, "team-a"), (run_b, "team-b")):  # each run's own file, online
        (run_file,) = (fleet.state / "wandb").glob(f"wandb/run-*-{run_id}/run-{run_id}.wandb")
        (run,) = [r.run for r in wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
        assert (run.run_id, run.project) == (run_id, project)

    for api, job in ((a, job_a), (b, job_b)):
        responses = job_responses(api, job["id"])
        for r in responses:
            assert value not in r.text, f"{r.request.url}: the secret's value"
        events = [e["message"] for e in responses[1].json()["data"]]
        assert any(m.startswith("Logging to Weights & Biases: run ") for m in events), events
        assert not any("tracking stopped" in m for m in events), events
        samples = [s for r in responses[3:6] for s in r.json()["data"]]
        assert samples and all(s["reward"] == 0.0 for s in samples), "the sandboxed grader found the secret"
        metrics = responses[2].json()["data"]
        assert [m["metrics"]["scores"]["train_reward_mean"] for m in metrics] == [0.0, 0.0, 0.0]
    messages_a = [e["message"] for e in job_responses(a, job_a["id"])[1].json()["data"]]
    assert any("project team-a with this project's key" in m for m in messages_a), messages_a

    assert fleet.stack.api is not None and fleet.stack.worker is not None
    for log in (fleet.stack.api.log, fleet.stack.worker.log):
        assert value not in log.read_text(errors="replace"), f"{log}: the secret's value"
    leaked = [p for p in fleet.state.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]
    assert not leaked, leaked


def own_judge(url: str) -> dict[str, Any]:
    return {
        "type": "score_model",
        "name": "judge",
        "model": "judge-1",
        "input": [{"role": "user", "content": "Is {{sample.output_text}} equal to {{item.answer}}? Score 0 to 1."}],
        "endpoint": url,
        "api_key_secret": "judge",
    }


def test_a_projects_own_judge_scores_its_job_with_its_key_which_no_other_project_can_name(fleet: Fleet) -> None:
    a, b = fleet.project("judge-A"), fleet.project("judge-B")
    value = MARK + secrets.token_hex(16)
    fleet.judge.key = value
    assert a.post("/v1/secrets", json={"name": "judge", "value": value}).status_code == 201
    grader = {  # the judge's score, unless the sandboxed grader beside it finds the key (then 0)
        "type": "multi",
        "graders": {"judge": own_judge(fleet.judge.url), "hunt": hunting_grader(places(fleet.state))},
        "calculate_output": "judge * (1 - hunt)",
    }
    job = run_job(fleet, a, None, grader)
    assert fleet.judge.seen and set(fleet.judge.seen) == {f"Bearer {value}"}, "the judge was not called with the key"
    responses = job_responses(a, job["id"])
    metrics = responses[2].json()["data"]
    assert [m["metrics"]["scores"]["train_reward_mean"] for m in metrics] == [0.75, 0.75, 0.75]

    f = b.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("b.jsonl", jsonl(ARITH_ROWS))})
    body = job_body(TINY_ID, f.json()["id"], grader=own_judge(fleet.judge.url))
    refused = b.post("/v1/fine_tuning/jobs", json=body)  # B never wrote "judge": A's is not there for it
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["param"] == "method.reinforcement.grader.api_key_secret"
    assert refused.json()["error"]["code"] == "secret_not_found"
    for r in [*responses, refused]:
        assert value not in r.text, f"{r.request.url}: the secret's value"
    assert fleet.stack.api is not None and fleet.stack.worker is not None
    for log in (fleet.stack.api.log, fleet.stack.worker.log):
        assert value not in log.read_text(errors="replace"), f"{log}: the secret's value"
    leaked = [p for p in fleet.state.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]
    assert not leaked, leaked
