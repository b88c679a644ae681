"""Isolation between projects: project B's key, pointed at project A's objects, gets 404 on every public
endpoint — the same 404 as for an id that never existed — and nothing of A ever appears in B's responses.

The endpoints are read from ``app.routes``, so an endpoint added later is walked too; one whose path names an id
this test cannot fill, or that needs a body it does not know, fails the test until it is added here.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from api.checkpoints.downloads import sign
from api.core.settings import ApiSettings
from runtime.storage import LocalStore
from tests.helpers import ARITH_ROWS, PY_GRADER, job_body, jsonl, metrics_event
from tests.tiny_model import TINY_ID
from tests.training_objects import make_training_objects
from tests.unit.test_tenants import bearer, new_key

JOBS = "/v1/fine_tuning/jobs"
DOWNLOADS = "/v1/downloads/{token}"
WORKER = {"Authorization": "Bearer t0k"}
PARAM = re.compile(r"{(\w+)}")
EVAL_RUN = {
    "data_source": {
        "type": "completions",
        "source": {"type": "file_content", "content": [{"item": {"q": "1+1="}}]},
        "input_messages": {"type": "template", "template": [{"role": "user", "content": "{{item.q}}"}]},
        "model": TINY_ID,
    }
}
# (method, path) -> a valid body, for routes that need one
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/evals/{eval_id}"): {"name": "renamed"},
    ("POST", "/v1/evals/{eval_id}/runs"): EVAL_RUN,
    ("POST", "/v1/training_runs/{training_run_id}/metrics"): {"step": 2, "metrics": {"reward": 1.0}},
    ("POST", "/v1/fine_tuning/jobs/{fine_tuning_job_id}/budget"): {"max_cost": 5.0},
}
SAMPLE = {"prompt": "1+1=", "completion": "2", "reward": 1.0, "advantage": 0.5}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False}


def make_project_objects(client: TestClient, settings: ApiSettings, headers: dict[str, str]) -> dict[str, str]:
    """One of everything a project owns, made through the public API and a worker's internal API: a file, a
    succeeded job with events, metrics and a checkpoint (bytes in the store), a webhook endpoint with a delivery.
    Keys are the path parameter names of the routes (``file_id``, ``fine_tuning_job_id``, …)."""
    rows = jsonl(ARITH_ROWS)
    f = client.post(
        "/v1/files",
        data={"purpose": "fine-tune"},
        files={"file": ("d.jsonl", rows)},
        headers=headers | {"Idempotency-Key": "upload-1"},
    )
    assert f.status_code == 201, f.text
    file_id = f.json()["id"]
    assert "idempotent-replayed" not in f.headers  # the same key in another project is another key
    ep = client.post("/v1/webhook_endpoints", json={"url": "https://example.com/hook"}, headers=headers)
    assert ep.status_code == 201, ep.text
    secret_value = f"wb{secrets.token_hex(24)}"  # never in any response, A's own included
    secret_body = {"name": f"wandb-{secrets.token_hex(4)}", "value": secret_value}
    secret = client.post("/v1/secrets", json=secret_body, headers=headers)
    assert secret.status_code == 201 and secret_value not in secret.text, secret.text
    r = client.post(JOBS, json=job_body(TINY_ID, file_id), headers=headers | {"Idempotency-Key": "create-1"})
    assert r.status_code == 201, r.text
    job = r.json()
    assert "idempotent-replayed" not in r.headers
    url = f"/internal/jobs/{job['id']}"
    claim = client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=WORKER).json()
    prefix, epoch = claim["object_prefix"], claim["epoch"]
    assert prefix == f"projects/{job['organization_id']}/jobs/{job['id']}/"
    key = f"{prefix}checkpoints/step-000001-e{epoch}.tar"
    blob = settings.state_dir / f"{job['id']}.tar"
    blob.write_bytes(f"adapter of {job['id']}".encode())
    LocalStore(settings.objects_dir).put_file(key, blob)
    metrics = metrics_event(1, samples=[SAMPLE])
    assert client.post(f"{url}/events", json={"epoch": epoch, "events": [metrics]}, headers=WORKER).status_code == 200
    ck = client.post(f"{url}/checkpoints", json={"epoch": epoch, "step_number": 1, "object_key": key}, headers=WORKER)
    assert ck.status_code == 200, ck.text
    assert client.post(f"{url}/finish", json={"epoch": epoch, "status": "succeeded"}, headers=WORKER).status_code == 200
    ev = client.post(
        "/v1/evals",
        json={"data_source_config": {"type": "custom", "item_schema": {}}, "testing_criteria": [PY_GRADER]},
        headers=headers,
    )
    assert ev.status_code == 200, ev.text
    run = client.post(f"/v1/evals/{ev.json()['id']}/runs", json=EVAL_RUN, headers=headers)
    assert run.status_code == 201, run.text
    run_url = f"/internal/evals/runs/{run.json()['id']}"
    held = client.post(f"{run_url}/claim", json={"worker_id": "w", "claim_id": "evalclaim-1"}, headers=WORKER)
    assert held.status_code == 200, held.text
    item = {
        "datasource_item_id": 0,
        "datasource_item": {"q": "1+1="},
        "status": "pass",
        "input": [{"role": "user", "content": "1+1="}],
        "samples": [{"output": [{"role": "assistant", "content": "2"}], "finish_reason": "stop", "usage": {}}],
        "results": [{"name": "has_digit", "sample": 0, "score": 1.0, "passed": True}],
    }
    posted = client.post(f"{run_url}/items", json={"claim_id": "evalclaim-1", "items": [item]}, headers=WORKER)
    assert posted.status_code == 200, posted.text
    done = client.post(f"{run_url}/finish", json={"claim_id": "evalclaim-1", "status": "completed"}, headers=WORKER)
    assert done.status_code == 200, done.text
    items_url = f"/v1/evals/{ev.json()['id']}/runs/{run.json()['id']}/output_items"
    output_item = client.get(items_url, headers=headers).json()["data"][0]
    deliveries = client.get(f"/v1/webhook_endpoints/{ep.json()['id']}/deliveries", headers=headers).json()["data"]
    api_key = headers.get("Authorization", "Bearer open-mode").removeprefix("Bearer ")
    training = make_training_objects(client, api_key, LocalStore(settings.objects_dir))
    events = client.get(f"{JOBS}/{job['id']}/events", params={"limit": 100}, headers=headers).json()["data"]
    assert len(deliveries) == 1 and len(events) >= 5
    return {
        "file_id": file_id,
        "fine_tuning_job_id": job["id"],
        "checkpoint_id": ck.json()["id"],
        "endpoint_id": ep.json()["id"],
        "delivery_id": deliveries[0]["id"],
        "event_id": events[0]["id"],
        "eval_id": ev.json()["id"],
        "run_id": run.json()["id"],
        "output_item_id": output_item["id"],
        "training_run_id": training["model_id"],
        "session_id": training["session_id"],
        "training_checkpoint_id": training["training_checkpoint_id"],
        "project_id": job["organization_id"],
        "webhook_secret": ep.json()["secret"],
        "checkpoint_key": key,
        "object_prefix": prefix,
        "secret_name": secret.json()["name"],
        "secret_value": secret_value,
    }


def fake(value: str) -> str:
    """An id of the same kind that never existed: ``ftjob-000…``."""
    return f"{value.split('-', 1)[0]}-{'0' * 24}"


def api_routes(client: TestClient) -> list[tuple[str, str, APIRoute]]:
    routes = [r for r in client.app.routes if isinstance(r, APIRoute)]  # type: ignore[attr-defined]
    return sorted((m, r.path, r) for r in routes for m in r.methods if m != "HEAD")


def call(client: TestClient, method: str, path: str, ids: dict[str, str], headers: dict[str, str], **kw: Any) -> Any:
    missing = [p for p in PARAM.findall(path) if p not in ids]
    if missing:
        pytest.fail(f"{method} {path}: the isolation test has no object for {missing}; add one to make_project_objects")
    return client.request(
        method, PARAM.sub(lambda m: ids[m.group(1)], path), headers=headers, follow_redirects=False, **kw
    )


def assert_like_never(theirs: Any, never: Any, a_ids: dict[str, str], what: str) -> None:
    """A's id gets exactly the answer an id that never existed gets (the id the caller sent echoed, nothing else):
    no existence oracle, no 403."""
    assert theirs.status_code == 404, f"{what}: {theirs.status_code} {theirs.text}"
    assert theirs.json()["error"]["type"] == "not_found_error"
    echoed = theirs.text
    for value in a_ids.values():
        echoed = echoed.replace(value, fake(value))
    assert echoed == never.text, f"{what}: A's object answers unlike one that never existed"


def assert_nothing_of(a: dict[str, str], responses: list[Any]) -> None:
    for r in responses:
        for name, value in a.items():
            assert value not in r.text, f"{r.request.method} {r.request.url}: project A's {name} in {r.text[:300]}"


def test_another_projects_objects_are_404_on_every_endpoint_and_never_appear(
    client: TestClient, settings: ApiSettings
) -> None:
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    a_hdr, b_hdr = bearer(key_a), bearer(key_b)
    a = make_project_objects(client, settings, a_hdr)
    b = make_project_objects(client, settings, b_hdr)  # B has one of everything too: its lists are not empty
    a_ids = {k: v for k, v in a.items() if k.endswith(("_id", "_name"))}  # what a path names an object by
    assert not set(a_ids.values()) & set(b.values())
    nothing = {k: fake(v) for k, v in a_ids.items()}  # the same kinds of id, never created
    seen_by_b: list[Any] = []

    walked: list[tuple[str, str]] = []
    for method, path, route in api_routes(client):
        if path.startswith("/internal/"):  # a project key is not the worker token, whoever's it is
            for hdr in (a_hdr, b_hdr):
                internal_ids = a_ids | {
                    "job_id": a["fine_tuning_job_id"],
                    "model_id": TINY_ID,
                    "request_id": "req-1",
                    "replica_id": "infr-1",
                }
                assert call(client, method, path, internal_ids, hdr).status_code == 401
            continue
        if path.startswith("/api/v1/"):  # the training API's own key header: tests/unit/test_training_isolation.py
            continue
        if path == DOWNLOADS:  # no key at all: the signed token is the credential (checked below)
            continue
        if path.startswith("/v1/admin/"):  # the operator's routes: a project key never opens them
            for hdr in (a_hdr, b_hdr):
                operator_ids = {"model_id": "tiny-llama", "project_id": "proj-x", "replica_id": "infr-1"}
                r = call(client, method, path, operator_ids, hdr, json={"source": "/"})
                assert r.status_code == 403, (method, path, r.text)
            continue
        if not path.startswith("/v1/"):  # health, readiness, metrics: must address no tenant object
            assert not PARAM.search(path), f"{method} {path} takes an id outside /v1/: decide how it is scoped"
            continue
        body = BODIES.get((method, path))
        if not PARAM.search(path):
            if method == "GET":  # lists, the model catalog: B's view holds nothing of A's
                r = call(client, method, path, {}, b_hdr)
                assert r.status_code == 200, (path, r.text)
                seen_by_b.append(r)
            continue
        if route.body_field is not None and body is None:
            pytest.fail(f"{method} {path} needs a body: add a valid one to BODIES")
        kw = {"json": body} if body is not None else {}
        theirs = call(client, method, path, a_ids, b_hdr, **kw)
        never = call(client, method, path, nothing, b_hdr, **kw)
        assert_like_never(theirs, never, a_ids, f"{method} {path} with A's ids and B's key")
        walked.append((method, path))

    # The cursors of B's own lists and B's own objects, given A's ids: 404 or B's data only, never A's.
    for method, path, route in api_routes(client):
        queries = {p.alias for p in route.dependant.query_params}
        if method != "GET" or not path.startswith("/v1/") or "after" not in queries:
            continue
        for value in a_ids.values():
            r = call(client, method, path, b, b_hdr, params={"after": value})
            if r.status_code == 200:
                seen_by_b.append(r)
            elif r.status_code != 422:  # 422: a cursor of another type (a step number)
                never = call(client, method, path, b, b_hdr, params={"after": fake(value)})
                assert_like_never(r, never, a_ids, f"{path}?after= A's id")
    for path, value in ((JOBS, a["fine_tuning_job_id"]), ("/v1/files", a["file_id"])):
        assert client.get(path, params={"after": value}, headers=b_hdr).status_code == 404
    # Usage: B's by job lists B's jobs only; A's job as a filter answers like a job that never existed.
    seen_by_b.append(client.get("/v1/usage", params={"group_by": "job"}, headers=b_hdr))
    theirs = client.get("/v1/usage", params={"job_id": a["fine_tuning_job_id"]}, headers=b_hdr)
    never = client.get("/v1/usage", params={"job_id": fake(a["fine_tuning_job_id"])}, headers=b_hdr)
    assert_like_never(theirs, never, a_ids, "B's usage of A's job")

    # Creating with A's objects: A's file cannot be trained on. (A's Idempotency-Keys replayed nothing of A's
    # to B: make_project_objects uploaded the same bytes under the same key for both and B got its own file.)
    for field in ("training_file", "validation_file"):
        body = job_body(TINY_ID, b["file_id"]) | {field: a["file_id"]}
        r = client.post(JOBS, json=body, headers=b_hdr)
        never = client.post(JOBS, json=body | {field: fake(a["file_id"])}, headers=b_hdr)
        assert r.json()["error"]["param"] == field, r.text
        assert_like_never(r, never, a_ids, f"a job on A's file as {field}")
    assert_nothing_of(
        {k: v for k, v in a.items() if k != "object_prefix"} | {"a_prefix": a["object_prefix"]}, seen_by_b
    )

    # Download links: only A's key gets one for A's checkpoint (…/download_link is walked above: 404 for B). A
    # token naming A's object that B forges without the service's secret is refused like any bad token; a real
    # one is a 5-minute bearer link, whoever holds it (that is what a link is for).
    link = f"{JOBS}/{a['fine_tuning_job_id']}/checkpoints/{a['checkpoint_id']}/download_link"
    forged = sign(
        ApiSettings(worker_token="not-this-services-secret"), a["checkpoint_key"], "x.tar", int(time.time()) + 60
    )
    theirs = client.get(DOWNLOADS.format(token=forged), headers=b_hdr)
    assert_like_never(theirs, client.get(DOWNLOADS.format(token="x.y"), headers=b_hdr), a_ids, "a forged link")
    real = client.get(link, headers=a_hdr).json()["url"]
    assert client.get(real).content == f"adapter of {a['fine_tuning_job_id']}".encode()

    # B changed nothing of A's: and A's key reaches every walked route (the ids were real), deletes last.
    assert client.get(f"{JOBS}/{a['fine_tuning_job_id']}", headers=a_hdr).json()["status"] == "succeeded"
    content = call(client, "GET", f"{JOBS}/{{fine_tuning_job_id}}/checkpoints/{{checkpoint_id}}/content", a, a_hdr)
    assert content.content == f"adapter of {a['fine_tuning_job_id']}".encode()
    for method, path in sorted(walked, key=lambda mp: mp[0] == "DELETE"):
        r = call(
            client, method, path, a_ids, a_hdr, **({"json": BODIES[(method, path)]} if (method, path) in BODIES else {})
        )
        assert r.status_code in (200, 201, 302, 409), f"{method} {path} with A's own key: {r.status_code} {r.text}"
        assert a["secret_value"] not in r.text, f"{method} {path}: a secret's value, even to its own project"
    assert len(walked) >= 10, walked  # the routes with an id before tenants: the walk cannot have skipped them
    print(f"\nwalked {len(walked)} routes with path parameters: " + ", ".join(f"{m} {p}" for m, p in walked))
