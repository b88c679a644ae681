"""Money on the real stack (api.billing, api.usage.budgets, api.jobs.budget): the API with prices set, Postgres,
Redis, moto's S3 and a Celery worker process.

- A job whose budget is reached mid-run warns at 80 % and pauses at the cap with a checkpoint; both webhooks arrive,
  verified by the Standard Webhooks reference library; a resume is refused (402) until the budget is raised, and
  the resumed job ends with an adapter bit-identical (fp32) to the same job trained alone, uninterrupted. Its cost
  is computed from its usage records only: the sum of its two attempts' costs, at the configured price.
- A project over its monthly budget has a new job refused with 402 naming ``monthly_budget`` and by how much, and a
  training-API call refused through the `tinker` SDK's own ``BillingError``; the operator's changes are logged.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import tinker
import torch
from standardwebhooks import Webhook

from tests.helpers import ARITH_ROWS, PY_GRADER, job_body, jsonl
from tests.integration.adapters import adapter_of, trained_alone
from tests.integration.stack import Stack, production_env, running_api, wait_status
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PRICE = 3.6  # USD a device-hour of this machine's CPU: a thousandth of a dollar a device-second
DONE = {"succeeded", "failed", "cancelled"}


@dataclass
class Receiver:
    """A webhook endpoint of ours on 127.0.0.1 that keeps every request it is sent."""

    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                outer.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@dataclass
class Priced:
    stack: Stack
    projects: dict[str, tuple[str, str]]  # name -> (project id, key)

    def client(self, name: str) -> httpx.Client:
        key = self.projects[name][1]
        return httpx.Client(base_url=self.stack.url, timeout=30, headers={"Authorization": f"Bearer {key}"})

    def admin(self) -> httpx.Client:
        token = self.stack.env["ADMIN_TOKEN"]
        return httpx.Client(base_url=self.stack.url, timeout=30, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="module")
def priced(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Priced]:
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, tmp_path_factory.mktemp("state"))
        env |= {"PRICE_DEVICE_HOUR": json.dumps({"cpu": PRICE}), "WEBHOOK_POLL_SECONDS": "0.2"}
        with running_api(env, logs_dir) as stack:
            yield Priced(stack, {name: stack.project_key(name) for name in ("team-a", "team-b")})


def submit(api: httpx.Client, **hp: Any) -> dict[str, Any]:
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    body = job_body(TINY_ID, f.json()["id"], grader=PY_GRADER, precision="fp32", learning_rate=5e-3, **hp)
    body |= {"seed": 11, "budget": {"max_cost": 1000.0}}
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def wait_for(check: Any, stack: Stack, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.2)
    return found


def test_a_job_pauses_at_its_budget_and_resumes_to_the_same_adapter(
    priced: Priced, tiny_model_dir: Path, tmp_path: Path
) -> None:
    stack = priced.stack
    receiver = Receiver()
    with priced.client("team-a") as api:
        hook = api.post("/v1/webhook_endpoints", json={"url": receiver.url})
        assert hook.status_code == 201, hook.text
        job = submit(api, max_steps=40, checkpoint_interval=100)
        assert job["budget"] == {"max_cost": 1000.0, "max_device_hours": None}
        stack.start_worker()
        # once it has run a few steps, the budget is cut to 125 % of what it spent: warned at once, reached soon
        url = f"/v1/fine_tuning/jobs/{job['id']}"
        running = wait_for(lambda: (j := api.get(url).json())["steps_done"] >= 3 and j, stack)
        spent = running["usage"]["cost"]
        assert spent["unit"] == "USD" and spent["amount"] > 0, running["usage"]
        cap = round(spent["amount"] * 1.25, 6)
        assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/budget", json={"max_cost": cap}).status_code == 200
        paused = wait_status(api, job["id"], {"paused", *DONE}, 240, stack)
        assert paused["status"] == "paused" and paused["budget_alert"] == "reached", paused
        assert paused["steps_done"] < 40 and paused["usage"]["cost"]["amount"] >= cap
        ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
        assert ckpts and ckpts[0]["step_number"] == paused["steps_done"]  # the pause saved the finished steps
        events = api.get(f"/v1/fine_tuning/jobs/{job['id']}/events", params={"limit": 100}).json()["data"]
        messages = [e["message"] for e in events]
        assert any(m.startswith("Budget warning: the job has spent") for m in messages), messages
        assert any(m.startswith("Budget reached: the job has spent") and "max_cost" in m for m in messages)
        steps = [e for e in events if e["type"] == "metrics"]
        assert all(e["cost"]["unit"] == "USD" for e in steps)  # each step carries the running cost
        costs = [e["cost"]["amount"] for e in sorted(steps, key=lambda e: e["data"]["step"])]
        assert costs == sorted(costs) and costs[-1] <= paused["usage"]["cost"]["amount"]
        # both webhooks, signed as Standard Webhooks says, verified by its own library
        wait_for(lambda: len(receiver.requests) >= 2, stack, 60)
        secret = hook.json()["secret"]
        kinds = [Webhook(secret).verify(body, headers)["type"] for headers, body in receiver.requests]
        assert kinds == ["fine_tuning.job.budget_warning", "fine_tuning.job.budget_reached"], kinds
        # a resume before the budget is raised: refused, naming the budget
        refused = api.post(f"/v1/fine_tuning/jobs/{job['id']}/resume")
        assert refused.status_code == 402, refused.text
        assert refused.json()["error"]["code"] == "budget_exceeded" and "max_cost" in refused.json()["error"]["message"]
        assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/budget", json={"max_cost": 1000.0}).status_code == 200
        assert api.post(f"/v1/fine_tuning/jobs/{job['id']}/resume").status_code == 200
        done = wait_status(api, job["id"], DONE, 300, stack)
        assert done["status"] == "succeeded" and done["steps_done"] == 40, done
        # exact: the paused and resumed job's adapter is the uninterrupted one's, bit for bit
        served = adapter_of(api, job["id"], tmp_path / "served")
        alone = trained_alone(done, tiny_model_dir, tmp_path / "alone")
        assert served.keys() == alone.keys()
        assert all(torch.equal(served[k], alone[k]) for k in served)
        # money from the usage records only: the job's cost is its attempts' costs summed, at the price
        attempts = api.get("/v1/usage", params={"job_id": job["id"], "group_by": "attempt"}).json()
        assert [b["attempt"] for b in attempts["data"]] == [2, 1]
        by_attempt = sum(b["cost"]["amount"] for b in attempts["data"])
        hours = sum(b["device_seconds"] for b in attempts["data"]) / 3600
        assert done["usage"]["cost"]["amount"] == pytest.approx(by_attempt, abs=1e-8)
        assert done["usage"]["cost"]["amount"] == pytest.approx(hours * PRICE, abs=1e-8)
        assert attempts["totals"]["cost"]["amount"] == pytest.approx(by_attempt, abs=1e-8)
    with priced.admin() as admin:  # each change of the budget is in the operator's log, newest first
        log = admin.get("/v1/admin/billing/changes", params={"project_id": priced.projects["team-a"][0]}).json()
        changed = [(c["subject"], c["before"], c["after"]) for c in log["data"]]
        assert changed == [
            (f"job:{job['id']}", {"max_cost": cap}, {"max_cost": 1000.0}),
            (f"job:{job['id']}", {"max_cost": 1000.0}, {"max_cost": cap}),
        ], changed


def test_a_project_over_its_monthly_budget_is_refused_new_work(priced: Priced) -> None:
    project, key = priced.projects["team-b"]
    with priced.admin() as admin:
        r = admin.post(f"/v1/admin/projects/{project}/billing", json={"monthly_budget": 0})
        assert r.status_code == 200, r.text
        assert r.json()["over_budget"] and r.json()["unit"] == "USD"
        log = admin.get("/v1/admin/billing/changes", params={"project_id": project}).json()["data"]
        assert [(c["field"], c["before"], c["after"], c["actor"]) for c in log] == [
            ("monthly_budget", None, 0.0, "admin-api")
        ]
    with priced.client("team-b") as api:
        f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
        r = api.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, f.json()["id"]))
        assert r.status_code == 402, r.text
        error = r.json()["error"]
        assert (error["code"], error["param"]) == ("budget_exceeded", "monthly_budget")
        assert f"project {project} has spent 0.0000 USD of its monthly budget of 0.0000 USD" in error["message"]
        assert "(over by 0.0000 USD)" in error["message"] and "new jobs are refused" in error["message"]
        billing = api.get("/v1/billing").json()
        assert billing["over_budget"] and billing["monthly_budget"] == 0 and billing["device_hour"] == {"cpu": PRICE}
        # an estimate is still answered: a team over budget may plan what to ask for
        assert api.post("/v1/fine_tuning/jobs/estimate", json=job_body(TINY_ID, f.json()["id"])).status_code == 200
    sc = tinker.ServiceClient(base_url=priced.stack.url, api_key=f"tml-{key}")
    try:
        with pytest.raises(tinker.BillingError) as refused:
            sc.create_lora_training_client(base_model=TINY_ID, rank=8, seed=1).result()
        assert "monthly budget" in str(refused.value), refused.value
    finally:
        with contextlib.suppress(Exception):
            sc.close("success").result(timeout=30)
    with priced.admin() as admin:  # the budget lifted: the same project may train again
        lifted = admin.post(f"/v1/admin/projects/{project}/billing", json={"clear_monthly_budget": True}).json()
        assert lifted["monthly_budget"] is None and not lifted["over_budget"]
