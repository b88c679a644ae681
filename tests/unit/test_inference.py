"""The API's inference routes against a fake OpenAI-compatible server (tests/fake_inference.py): which model a
name means, adapters loaded on first use and unloaded least-recently-used, a restarted server, streaming, errors,
and isolation between projects. The real vLLM server is exercised by tests/integration/test_inference.py."""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from api.inference.router import Router
from api.inference.service import InferenceClient
from runtime.storage import LocalStore
from scripts.local_stack import free_port
from tests.fake_inference import FakeInference
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID
from tests.unit.test_tenants import bearer, new_key

WORKER = {"Authorization": "Bearer t0k"}
CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def fake() -> Iterator[FakeInference]:
    server = FakeInference(TINY_ID).start()
    yield server
    server.stop()


@pytest.fixture
def settings_overrides(fake: FakeInference, tmp_path: Path) -> dict[str, Any]:
    return {
        "reaper": False,
        "webhook_dispatcher": False,
        "inference_base_url": fake.url,
        "inference_max_adapters": 2,
        "rate_limit_per_minute": 0,
        "inference_on_demand": False,  # one server, as configured (tests/unit/test_inference_fleet.py starts more)
    }


def adapter_tar(tag: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (
            ("adapter_config.json", json.dumps({"tag": tag, "r": 16}).encode()),
            ("adapter_model.safetensors", b"w"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def trained_job(
    client: TestClient, settings: ApiSettings, headers: dict[str, str] | None = None, steps: tuple[int, ...] = (1, 2)
) -> dict[str, Any]:
    """A succeeded job with one checkpoint per step (adapter tars in the object store), as a worker leaves it."""
    headers = headers or {}
    f = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
    )
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, f.json()["id"]), headers=headers).json()
    url = f"/internal/jobs/{job['id']}"
    claim = client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=WORKER).json()
    for step in steps:
        key = f"{claim['object_prefix']}checkpoints/step-{step:06d}.tar"
        blob = settings.state_dir / f"{job['id']}-{step}.tar"
        blob.write_bytes(adapter_tar(f"{job['id']}-{step}"))
        LocalStore(settings.objects_dir).put_file(key, blob)
        body = {"epoch": claim["epoch"], "step_number": step, "object_key": key}
        assert client.post(f"{url}/checkpoints", json=body, headers=WORKER).status_code == 200
    body = {"epoch": claim["epoch"], "status": "succeeded"}
    assert client.post(f"{url}/finish", json=body, headers=WORKER).status_code == 200
    job = client.get(f"/v1/fine_tuning/jobs/{job['id']}", headers=headers).json()
    ckpts = client.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints", headers=headers).json()["data"]
    return {"job": job, "checkpoints": {c["step_number"]: c for c in ckpts}}


def the_replica(client: TestClient) -> InferenceClient:
    """The client of the one replica (INFERENCE_BASE_URL) the app's router knows."""
    app: Any = client.app
    router: Router = app.state.inference
    (replica,) = router.known.replicas.values()
    return replica.client


def chat(client: TestClient, model: str, headers: dict[str, str] | None = None, **body: Any) -> Any:
    return client.post(CHAT, json={"model": model, "messages": HELLO, **body}, headers=headers or {})


def test_base_model_is_forwarded_as_is(client: TestClient, fake: FakeInference) -> None:
    r = chat(client, TINY_ID, temperature=0.5, n=2, top_k=5)  # top_k: a vLLM extra, passed through
    assert r.status_code == 200, r.text
    assert r.json()["model"] == TINY_ID and len(r.json()["choices"]) == 2
    assert fake.calls == [("chat", TINY_ID)] and not fake.adapters


def test_a_fine_tuned_model_loads_its_adapter_once_and_answers_under_its_own_name(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    t = trained_job(client, settings)
    name, last = t["job"]["fine_tuned_model"], t["checkpoints"][2]
    for _ in range(2):
        r = chat(client, name)
        assert r.status_code == 200, r.text
        assert r.json()["model"] == name and r.json()["choices"][0]["message"]["content"] == f"answer from {last['id']}"
    # the job's model is its newest checkpoint: the same adapter under that checkpoint's names, still one load
    for alias in (last["fine_tuned_model_checkpoint"], last["id"]):
        assert chat(client, alias).json()["model"] == alias
    assert [c for c in fake.calls if c[0] == "load"] == [("load", last["id"])]
    assert json.loads((Path(fake.adapters[last["id"]]) / "adapter_config.json").read_text())["tag"].endswith("-2")
    # completions too
    r = client.post("/v1/completions", json={"model": name, "prompt": "1+1="})
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == f"answer from {last['id']}"


def test_checkpoints_can_be_compared_and_the_least_recently_used_adapter_is_unloaded(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    a = trained_job(client, settings, steps=(1, 2))
    b = trained_job(client, settings, steps=(1,))
    step1, step2 = (a["checkpoints"][s]["fine_tuned_model_checkpoint"] for s in (1, 2))
    other = b["job"]["fine_tuned_model"]
    assert chat(client, step1).json()["choices"][0]["message"]["content"] == f"answer from {a['checkpoints'][1]['id']}"
    assert chat(client, step2).json()["choices"][0]["message"]["content"] == f"answer from {a['checkpoints'][2]['id']}"
    chat(client, step1)  # step 2 is now the least recently used
    assert chat(client, other).status_code == 200  # capacity 2: step 2 goes
    assert set(fake.adapters) == {a["checkpoints"][1]["id"], b["checkpoints"][1]["id"]}
    assert ("unload", a["checkpoints"][2]["id"]) in fake.calls
    assert chat(client, step2).status_code == 200  # loaded again on demand


def test_a_restarted_server_gets_the_adapter_again(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    name = trained_job(client, settings)["job"]["fine_tuned_model"]
    assert chat(client, name).status_code == 200
    fake.restart()
    r = chat(client, name)
    assert r.status_code == 200, r.text
    assert [c[0] for c in fake.calls].count("load") == 2


def test_streaming_names_the_requested_model_in_every_chunk(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    name = trained_job(client, settings)["job"]["fine_tuned_model"]
    with client.stream("POST", CHAT, json={"model": name, "messages": HELLO, "stream": True}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["model"] for c in chunks} == {name}
    assert "".join(c["choices"][0]["delta"]["content"] for c in chunks).startswith("answer from ftckpt-")


def test_models_lists_the_projects_fine_tuned_models_beside_the_base_models(
    client: TestClient, settings: ApiSettings
) -> None:
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    t = trained_job(client, settings, bearer(key_a))
    a_models = client.get("/v1/models", headers=bearer(key_a)).json()["data"]
    mine = [m for m in a_models if m["id"] == t["job"]["fine_tuned_model"]]
    assert len(mine) == 1 and mine[0]["owned_by"] == t["job"]["organization_id"] and mine[0]["parent"] == TINY_ID
    assert any(m["id"] == TINY_ID and m["owned_by"] == "system" for m in a_models)
    b_models = client.get("/v1/models", headers=bearer(key_b)).json()["data"]
    assert [m["id"] for m in b_models] == [TINY_ID]


def test_another_projects_model_is_not_found_like_one_that_never_existed(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    t = trained_job(client, settings, bearer(key_a))
    job_id, ckpt = t["job"]["id"], t["checkpoints"][2]
    fake_job = "ftjob-" + "0" * 24
    for theirs in (t["job"]["fine_tuned_model"], ckpt["fine_tuned_model_checkpoint"], ckpt["id"]):
        for route, body in ((CHAT, {"messages": HELLO}), ("/v1/completions", {"prompt": "x"})):
            r = client.post(route, json={"model": theirs, **body}, headers=bearer(key_b))
            never = theirs.replace(job_id, fake_job).replace(ckpt["id"], "ftckpt-" + "0" * 24)
            n = client.post(route, json={"model": never, **body}, headers=bearer(key_b))
            assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found", r.text
            assert r.text.replace(job_id, fake_job).replace(ckpt["id"], "ftckpt-" + "0" * 24) == n.text
    assert not [c for c in fake.calls if c[0] != "chat" or c[1] != TINY_ID]  # nothing reached the server
    assert chat(client, t["job"]["fine_tuned_model"], bearer(key_a)).status_code == 200  # A's own key works


def test_a_running_jobs_checkpoint_is_usable_but_its_model_name_is_not_yet(
    client: TestClient, settings: ApiSettings
) -> None:
    f = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, f.json()["id"])).json()
    url = f"/internal/jobs/{job['id']}"
    claim = client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=WORKER).json()
    key = f"{claim['object_prefix']}checkpoints/step-000001.tar"
    (settings.state_dir / "a.tar").write_bytes(adapter_tar("running"))
    LocalStore(settings.objects_dir).put_file(key, settings.state_dir / "a.tar")
    body = {"epoch": claim["epoch"], "step_number": 1, "object_key": key}
    assert client.post(f"{url}/checkpoints", json=body, headers=WORKER).status_code == 200
    ckpt = client.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"][0]
    assert client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["status"] == "running"
    assert chat(client, ckpt["fine_tuned_model_checkpoint"]).status_code == 200  # compare while it trains
    assert chat(client, ckpt["id"]).status_code == 200
    r = chat(client, f"ft:{TINY_ID}:rft:{job['id']}")  # the job's own name exists once it succeeded
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    assert chat(client, f"ft:{TINY_ID}:rft:{job['id']}:ckpt-step-7").status_code == 404  # no such step
    assert chat(client, f"ft:{TINY_ID}:rft:{job['id']}:ckpt-step-{'9' * 40}").status_code == 404  # not a 500
    assert chat(client, "gpt-4o").json()["error"]["param"] == "model"


def test_concurrent_first_uses_load_once_and_an_adapter_in_use_is_never_unloaded(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    a = trained_job(client, settings, steps=(1, 2, 3))
    names = [a["checkpoints"][step]["fine_tuned_model_checkpoint"] for step in (1, 2, 3)]
    fake.delay = 0.5
    with ThreadPoolExecutor(4) as pool:  # four requests for one adapter at once: one load
        assert all(r.status_code == 200 for r in pool.map(lambda _: chat(client, names[0]), range(4)))
    assert [c for c in fake.calls if c[0] == "load"] == [("load", a["checkpoints"][1]["id"])]
    # capacity 2: while step 1's request is in flight, steps 2 and 3 arrive; step 1 is not unloaded under it
    fake.delay = 1.5
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(chat, client, names[0])
        time.sleep(0.5)
        fake.delay = 0.0
        assert chat(client, names[1]).status_code == 200 and chat(client, names[2]).status_code == 200
        assert slow.result().status_code == 200
    assert ("unload", a["checkpoints"][1]["id"]) not in fake.calls
    assert the_replica(client).slots._in_use == {}  # every request released


def test_an_adapter_above_the_servers_rank_is_a_400_naming_the_limit(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    name = trained_job(client, settings)["job"]["fine_tuned_model"]
    the_replica(client).max_lora_rank = 8  # the tar's adapter says r=16
    r = chat(client, name)
    assert r.status_code == 400 and r.json()["error"]["code"] == "adapter_rank_too_large", r.text
    assert "--max-lora-rank 16" in r.json()["error"]["message"] and not fake.adapters


def test_each_project_gets_its_own_prefix_cache_salt(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    chat(client, TINY_ID, bearer(key_a), cache_salt="guess")  # a caller's own salt is replaced
    chat(client, TINY_ID, bearer(key_a))
    chat(client, TINY_ID, bearer(key_b))
    salts = [b["cache_salt"] for b in fake.bodies]
    assert salts[0] == salts[1] != salts[2] and "guess" not in salts and len(salts[0]) == 64


def test_bad_sampling_parameters_are_422_naming_the_field(client: TestClient) -> None:
    for field, value in (("temperature", 3), ("top_p", 0), ("n", 0), ("max_tokens", 0), ("top_logprobs", 21)):
        r = chat(client, TINY_ID, **{field: value})
        assert r.status_code == 422 and r.json()["error"]["param"] == field, r.text
    assert client.post(CHAT, json={"model": TINY_ID, "messages": []}).json()["error"]["param"] == "messages"


def test_upstream_errors_keep_the_error_shape(client: TestClient, settings: ApiSettings, fake: FakeInference) -> None:
    t = trained_job(client, settings)
    # a load the server refuses is the service's failure (a 502 with the server's words), whatever its status
    fake.fail_load = (500, "LoRA rank 128 is greater than max_lora_rank 64")
    r = chat(client, t["job"]["fine_tuned_model"])
    err = r.json()["error"]
    assert r.status_code == 502 and err["type"] == "server_error" and err["code"] == "adapter_load_failed", r.text
    assert "max_lora_rank 64" in err["message"] and t["job"]["fine_tuned_model"] in err["message"]
    fake.fail_load = (404, "No adapter found for /adapters/x")  # e.g. a volume the server does not mount
    assert chat(client, t["checkpoints"][1]["id"]).status_code == 502
    # a request the server refuses for its parameters keeps its status
    fake.fail_load = None
    r = client.post(CHAT, json={"model": TINY_ID, "messages": HELLO, "max_tokens": 10**6})
    assert r.status_code == 400 and "maximum context length" in r.json()["error"]["message"], r.text


def test_a_model_whose_base_the_server_does_not_serve_is_404_naming_what_it_serves(
    client: TestClient, fake: FakeInference
) -> None:
    fake.base = "another-model"
    r = chat(client, TINY_ID)
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_served", r.text
    assert "another-model" in r.json()["error"]["message"]


def test_a_server_that_is_down_is_a_503_naming_it(settings: ApiSettings, tmp_path: Path) -> None:
    from api.main import create_app

    url = f"http://127.0.0.1:{free_port()}/v1"
    down = settings.model_copy(update={"inference_base_url": url})
    with TestClient(create_app(down)) as c:
        r = chat(c, TINY_ID)
        assert r.status_code == 503 and url in r.json()["error"]["message"], r.text
        assert r.json()["error"]["code"] == "inference_unavailable" and r.headers["retry-after"]
        ready = c.get("/readyz")  # reported, not required: files and jobs still work without inference
        assert ready.status_code == 200 and url in ready.json()["checks"]["inference"], ready.text
        assert ready.json()["degraded"] == ["inference"]


def test_without_an_inference_server_the_routes_say_how_to_configure_one(settings: ApiSettings) -> None:
    from api.main import create_app

    with TestClient(create_app(settings.model_copy(update={"inference_base_url": None}))) as c:
        r = chat(c, TINY_ID)
        assert r.status_code == 503 and "INFERENCE_BASE_URL" in r.json()["error"]["message"]
        assert "inference" not in c.get("/readyz").json().get("checks", {})


def test_answers_are_metered_per_project_and_model_streamed_or_not(
    client: TestClient, settings: ApiSettings, fake: FakeInference
) -> None:
    """Every answer's tokens count for the caller's project (GET /v1/usage, kind inference); a stream is metered
    whether or not its client asked for the usage chunk, and one that did not ask never sees it."""
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    a = bearer(key_a)
    assert chat(client, TINY_ID, a).json()["usage"]["total_tokens"] == 6
    for asked in (False, True):
        body = {"model": TINY_ID, "messages": HELLO, "stream": True}
        body |= {"stream_options": {"include_usage": True}} if asked else {}
        with client.stream("POST", CHAT, json=body, headers=a) as r:
            chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
        assert [c.get("usage") for c in chunks if "usage" in c] == ([None] * 3 + [chunks[-1]["usage"]] if asked else [])
        assert all(c["choices"] for c in chunks) != asked
    assert fake.bodies[-1]["stream_options"] == {"include_usage": True}
    used = client.get("/v1/usage", params={"kind": "inference", "group_by": "job"}, headers=a).json()
    assert used["totals"]["inference_tokens"] == 6 + 6 + 6 and used["totals"]["device_seconds"] == 0
    assert used["data"][0]["job_id"] is None
    assert client.get("/v1/usage", headers=bearer(key_b)).json()["totals"]["inference_tokens"] == 0
