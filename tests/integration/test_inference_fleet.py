"""The inference fleet on real components: Postgres, Redis, moto's S3, the API, a Celery worker, and vLLM's CPU
server (``python -m worker.inference_server``) as every replica, asked through OpenAI's SDK.

Two base models: SmolLM2-135M-Instruct (from the catalog) and a small random-weight Llama registered in the model
registry as a second base (``python -m api.admin models add``). A job fine-tunes each. SmolLM2 gets two replicas the
operator runs and registers (``python -m api.admin inference add``): its fine-tuned model's requests all reach the
replica that holds its adapter, and stopping that replica moves them to the other with no failed request. The second
base has no replica: its first request asks a worker for one (answered 503 ``model_starting`` with Retry-After past
the start wait, which the SDK honours), the worker starts vLLM and the model is served; idle past the timeout, the
worker stops it. Another project's fine-tuned models are a 404 whichever replica would serve them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from grpo_core.models.catalog import SMOLLM2_ID
from scripts.local_stack import Proc, free_port, wait_http
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.stack import Stack, production_env, running_api, wait_status
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import build_tiny_model

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SECOND = "tiny-chat"  # the second base model
IDLE_SECONDS = 20  # well above the Retry-After of a starting model (5 s) and the start wait
HELLO = [{"role": "user", "content": "What is 2 + 3?"}]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def second_base(root: Path) -> Path:
    """A random-weight Llama (head dim 32, as vLLM's CPU attention wants) with a chat template."""
    folder = build_tiny_model(root, SECOND, hidden_size=64, num_attention_heads=2)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = CHAT_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def fleet(
    s3: dict[str, str], smollm2_catalog: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, smollm2_catalog, tmp_path_factory.mktemp("state"))
        env |= {
            "INFERENCE_ON_DEMAND": "true",
            "INFERENCE_IDLE_SECONDS": str(IDLE_SECONDS),
            "INFERENCE_START_WAIT_SECONDS": "3",
            "INFERENCE_HEALTH_SECONDS": "2",
            "OMP_NUM_THREADS": "2",
            "LEASE_SECONDS": "120",
        }
        with running_api(env, logs_dir) as stack:
            yield stack


def train(api: httpx.Client, stack: Stack, model: str) -> str:
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    r = api.post("/v1/fine_tuning/jobs", json=job_body(model, f.json()["id"], max_steps=2, checkpoint_interval=2))
    assert r.status_code == 201, r.text
    job = wait_status(api, r.json()["id"], {"succeeded", "failed", "cancelled"}, 600, stack)
    assert job["status"] == "succeeded", job
    return str(job["fine_tuned_model"])


def adapters_on(url: str) -> set[str]:
    cards = httpx.get(f"{url}/models", timeout=10).json()["data"]
    return {c["id"] for c in cards if c.get("parent")}


def replicas(stack: Stack) -> list[dict[str, str]]:
    headers = {"Authorization": f"Bearer {stack.env['ADMIN_TOKEN']}"}
    data: list[dict[str, str]] = httpx.get(f"{stack.url}/v1/admin/inference/replicas", headers=headers).json()["data"]
    return data


def test_two_base_models_served_by_affinity_with_failover_and_on_demand(
    fleet: Stack, logs_dir: Path, tmp_path: Path
) -> None:
    stack = fleet
    stack.admin("models", "add", str(second_base(tmp_path / "models")), "--id", SECOND)
    _, key = stack.project_key("fleet-a")
    _, other_key = stack.project_key("fleet-b")
    ports = [free_port(), free_port()]
    serve = [sys.executable, "-m", "worker.inference_server", SMOLLM2_ID, "--port"]
    # the operator's two replicas load while the jobs train (minutes saved on two cores)
    servers = [Proc(f"replica{i}", [*serve, str(p)], stack.env, logs_dir) for i, p in enumerate(ports)]
    urls = [f"http://127.0.0.1:{p}/v1" for p in ports]
    try:
        with httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api:
            stack.start_worker()
            smol, tiny = train(api, stack, SMOLLM2_ID), train(api, stack, SECOND)
        for url, server in zip(urls, servers, strict=True):
            wait_http(f"{url}/models", proc=server.popen, timeout=600)
            stack.admin("inference", "add", SMOLLM2_ID, url)
        # the API routes by the replicas it knows (re-read every 2 s): the admin list makes it read them now, so the
        # first request already ranks both (a replica that joins later takes over its share of adapters)
        known = [r for r in replicas(stack) if r["base_model"] == SMOLLM2_ID]
        assert sorted(r["url"] for r in known) == sorted(urls) and all(r["healthy"] is not False for r in known)
        client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key=key, max_retries=0)  # a failed request fails
        ask = {"messages": HELLO, "max_tokens": 8, "temperature": 0}
        for _ in range(4):
            assert client.chat.completions.create(model=smol, **ask).model == smol
        holders = [i for i, url in enumerate(urls) if adapters_on(url)]
        assert len(holders) == 1, [adapters_on(u) for u in urls]  # every request reached the one replica
        home = holders[0]
        servers[home].stop()
        for _ in range(3):  # its replica gone: the same model answers from the other, no request failing
            assert client.chat.completions.create(model=smol, **ask).choices[0].message.content is not None
        assert adapters_on(urls[1 - home])

        # the second base model: no replica until asked for; the first answer waits for a worker to start one
        with pytest.raises(openai.APIStatusError) as starting:
            client.chat.completions.create(model=tiny, **ask)
        assert starting.value.status_code == 503 and starting.value.response.headers["retry-after"]
        assert "model_starting" in str(starting.value.body)
        patient = openai.OpenAI(base_url=f"{stack.url}/v1", api_key=key, max_retries=60)  # honours Retry-After
        started = time.monotonic()
        assert patient.chat.completions.create(model=tiny, **ask).model == tiny
        print(f"the second base model served on demand {time.monotonic() - started:.0f} s after the 503")
        served = {m.id: m for m in client.models.list()}
        assert getattr(served[tiny], "serving", None) == "ready" and getattr(served[smol], "serving", None) == "ready"
        (mine,) = [r for r in replicas(stack) if r["origin"] == "started"]
        assert mine["base_model"] == SECOND and mine["state"] == "ready" and mine["worker_id"]

        # another project: none of these models exists for it, on any replica
        stranger = openai.OpenAI(base_url=f"{stack.url}/v1", api_key=other_key, max_retries=0)
        for model in (smol, tiny):
            with pytest.raises(openai.NotFoundError):
                stranger.chat.completions.create(model=model, **ask)

        deadline = time.monotonic() + IDLE_SECONDS + 90  # idle: its worker stops it
        while (state := next(r for r in replicas(stack) if r["id"] == mine["id"])["state"]) != "stopped":
            assert time.monotonic() < deadline, (state, stack.logs())
            time.sleep(2)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{mine['url']}/models", timeout=5)
        admin = {"Authorization": f"Bearer {stack.env['ADMIN_TOKEN']}"}
        usage = httpx.get(f"{stack.url}/v1/admin/usage", params={"kind": "serving"}, headers=admin).json()
        (served_time,) = usage["data"]  # the started replica's device time: the service's, not a project's
        assert served_time["project_id"] == "service" and served_time["device_seconds"] > 30, usage
    finally:
        for server in servers:
            server.stop()
