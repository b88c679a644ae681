"""Isolation of the training API (``/api/v1``, the ``tinker`` SDK's protocol): project B's key, given project A's
sessions, runs, sampling clients, futures and checkpoints, in a path or in a body, gets the 404 an id that never
existed gets, and B's lists hold nothing of A's. The routes are read from ``app.routes``: a route added later and
not covered here fails the test (as tests/unit/test_tenant_isolation.py does for ``/v1``).

A worker is played through the internal API (claim, take the requests, post results), so A's run, its checkpoints
and its finished futures are real rows.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from api.training.paths import TinkerPath, object_key
from api.training.wire import ForwardBackwardRequestPb
from runtime.storage import LocalStore
from tests.tiny_model import TINY_ID
from tests.unit.test_tenant_isolation import api_routes, assert_like_never, fake
from tests.unit.test_tenants import new_key

API = "/api/v1"
WORKER = {"Authorization": "Bearer t0k"}
PARAM = re.compile(r"{(\w+)(?::path)?}")


def tinker(key: str) -> dict[str, str]:
    return {"X-API-Key": f"tml-{key}"}


def _serve_one(client: TestClient, session_id: str, result: dict[str, Any]) -> None:
    """Play the session's worker for its next request: take it and post ``result``."""
    url = f"/internal/training/sessions/{session_id}"
    nxt = client.post(f"{url}/next", json={"claim_id": "c-1", "wait_seconds": 0}, headers=WORKER)
    assert nxt.status_code == 200 and nxt.json()["request"], nxt.text
    req = nxt.json()["request"]
    posted = client.post(f"{url}/results/{req['id']}", json={"claim_id": "c-1", "result": result}, headers=WORKER)
    assert posted.status_code == 200, posted.text


def fwdbwd_body(model_id: str, seq_id: int = 0) -> bytes:
    """A forward_backward body as the SDK encodes it (seq_id 0: not numbered)."""
    msg = ForwardBackwardRequestPb(model_id=model_id, seq_id=seq_id, loss_fn="cross_entropy")
    datum = msg.data.add()
    datum.model_input.add().encoded_text.tokens = struct.pack("<2i", 1, 3)
    for name, dtype, fmt, values in (("target_tokens", 2, "<2q", (3, 4)), ("weights", 1, "<2f", (1.0, 1.0))):
        datum.loss_fn_inputs[name].dense = struct.pack(fmt, *values)
        datum.loss_fn_inputs[name].dtype = dtype
        datum.loss_fn_inputs[name].shape.append(2)
    return bytes(msg.SerializeToString())


def make_training_objects(client: TestClient, key: str, store: LocalStore | None = None) -> dict[str, str]:
    """One of everything of the training API for ``key``'s project: a session, a run with a training and a sampler
    checkpoint (their tars in ``store``, when given), a sampling client on the latter, a finished future, and a
    reported metric."""
    h = tinker(key)
    sid = client.post(f"{API}/create_session", json={"tags": []}, headers=h).json()["session_id"]
    claim = {"worker_id": "w", "claim_id": "c-1"}
    made = client.post(
        f"{API}/create_model",
        json={"session_id": sid, "model_seq_id": 0, "base_model": TINY_ID, "lora_config": {"rank": 4}},
        headers=h,
    )
    assert made.status_code == 200, made.text
    run_id = made.json()["model_id"]
    assert client.post(f"/internal/training/sessions/{sid}/claim", json=claim, headers=WORKER).status_code == 200
    _serve_one(client, sid, {"model_id": run_id, "type": "create_model"})
    saved = client.post(f"{API}/save_weights", json={"model_id": run_id, "path": "s1"}, headers=h).json()
    _serve_one(client, sid, {"path": f"tinker://{run_id}/weights/s1", "size_bytes": 8})
    client.post(f"{API}/save_weights_for_sampler", json={"model_id": run_id, "path": "s1"}, headers=h)
    _serve_one(client, sid, {"path": f"tinker://{run_id}/sampler_weights/s1", "size_bytes": 8})
    listed = client.get(f"{API}/training_runs/{run_id}/checkpoints", headers=h).json()["checkpoints"]
    if store is not None:
        for c in listed:  # what the worker uploaded before posting the saves' results
            blob = Path(store.root).parent / f"{c['id']}.blob"
            blob.write_bytes(f"tar of {c['tinker_path']}".encode())
            store.put_file(object_key(_project_of(client, key), TinkerPath.parse(c["tinker_path"])), blob)
    sampler = client.post(
        f"{API}/create_sampling_session",
        headers=h,
        json={"session_id": sid, "sampling_session_seq_id": 0, "model_path": f"tinker://{run_id}/sampler_weights/s1"},
    )
    assert sampler.status_code == 200, sampler.text
    reported = client.post(
        f"/v1/training_runs/{run_id}/metrics",
        json={"step": 1, "metrics": {"reward": 0.5}},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert reported.status_code == 200, reported.text
    return {
        "session_id": sid,
        "training_run_id": run_id,
        "model_id": run_id,
        "sampling_session_id": sampler.json()["sampling_session_id"],
        "request_id": saved["request_id"],
        "tinker_path": f"tinker://{run_id}/weights/s1",
        "sampler_path": f"tinker://{run_id}/sampler_weights/s1",
        "tinker_checkpoint_id": "weights/s1",
        "training_checkpoint_id": next(c["id"] for c in listed if c["checkpoint_type"] == "sampler"),
    }


def _project_of(client: TestClient, key: str) -> str:
    """The project ``key`` opens (what /v1/training_runs reports as each run's owner, model_owner)."""
    runs = client.get(f"{API}/training_runs", headers=tinker(key)).json()["training_runs"]
    return str(runs[0]["model_owner"])


# The calls that name A's objects in their body: (path, body). Each answers B as an id that never existed.
def body_calls(a: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    sid, run = a["session_id"], a["model_id"]
    return [
        ("/session_heartbeat", {"session_id": sid}),
        ("/create_model", {"session_id": sid, "model_seq_id": 5, "base_model": TINY_ID}),
        ("/get_info", {"model_id": run}),
        ("/optim_step", {"model_id": run, "adam_params": {"learning_rate": 1e-4}}),
        ("/save_weights", {"model_id": run, "path": "mine"}),
        ("/save_weights_for_sampler", {"model_id": run, "path": "mine"}),
        ("/load_weights", {"model_id": run, "path": a["tinker_path"], "optimizer": True}),
        ("/load_weights", {"session_id": sid, "model_seq_id": 5, "path": a["tinker_path"], "optimizer": False}),
        ("/create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 5, "base_model": TINY_ID}),
        (
            "/create_sampling_session",
            {"session_id": sid, "sampling_session_seq_id": 6, "model_path": a["sampler_path"]},
        ),
        (
            "/asample",
            {
                "sampling_session_id": a["sampling_session_id"],
                "prompt": {"chunks": [{"tokens": [1]}]},
                "num_samples": 1,
                "sampling_params": {"max_tokens": 1},
            },
        ),
        ("/retrieve_future", {"request_id": a["request_id"]}),
        ("/weights_info", {"tinker_path": a["tinker_path"]}),
    ]


NO_OBJECT = {
    "/client/config",
    "/client/dynamic_config",
    "/healthz",
    "/telemetry",
    "/get_server_capabilities",
    "/create_session",
    "/training_runs",
    "/checkpoints",
}


def test_another_projects_training_objects_are_404_and_never_appear(client: TestClient, settings: ApiSettings) -> None:
    key_a, key_b = new_key(settings, name="A")[2], new_key(settings, name="B")[2]
    a = make_training_objects(client, key_a)
    b = make_training_objects(client, key_b)
    assert not {v for k, v in a.items() if k != "tinker_checkpoint_id"} & set(b.values())
    # the ids an answer may echo, longest first: a run's id starts with its session's, so it is replaced first
    ids = ("model_id", "sampling_session_id", "request_id", "session_id")
    a_ids = dict(sorted(((k, a[k]) for k in ids), key=lambda kv: -len(kv[1])))
    # the same kinds of id, never created (a checkpoint path of a run that never existed)
    nothing = {
        k: v.replace(a["model_id"], fake(a["model_id"])) if v.startswith("tinker://") else fake(v) for k, v in a.items()
    }
    nothing["tinker_checkpoint_id"] = a["tinker_checkpoint_id"]
    nothing["training_run_id"] = nothing["model_id"]
    hb = tinker(key_b)
    covered: set[str] = set()

    def compare(method: str, path: str, theirs: dict[str, Any], never: dict[str, Any], **kw: Any) -> None:
        r = client.request(method, f"{API}{path}", headers=hb, **theirs, **kw)
        n = client.request(method, f"{API}{path}", headers=hb, **never, **kw)
        assert_like_never(r, n, a_ids, f"{method} {API}{path} with A's ids and B's key")

    # ids in the path
    seen_by_b = []
    for method, path, _ in api_routes(client):
        if not path.startswith(f"{API}/") or path == f"{API}/{{rest:path}}":
            continue
        sub = path[len(API) :]
        if PARAM.search(sub):
            r = client.request(method, f"{API}{_fill(sub, a)}", headers=hb)
            n = client.request(method, f"{API}{_fill(sub, nothing)}", headers=hb)
            assert_like_never(r, n, a_ids, f"{method} {path} with A's ids and B's key")
            covered.add(sub)
        elif sub in NO_OBJECT:
            r = client.request(method, f"{API}{sub}", headers=hb, json={} if method == "POST" else None)
            assert r.status_code == 200, (sub, r.text)
            seen_by_b.append(r)
            covered.add(sub)
    # ids in the body
    for path, body in body_calls(a):
        compare("POST", path, {"json": body}, {"json": _swap(body, a, nothing)})
        covered.add(path)
    compare(
        "POST",
        "/forward_backward",
        {"content": fwdbwd_body(a["model_id"])},
        {"content": fwdbwd_body(nothing["model_id"])},
    )
    covered.add("/forward_backward")

    routes = {path[len(API) :] for _, path, _ in api_routes(client) if path.startswith(f"{API}/")}
    assert routes - covered == {"/{rest:path}"}, f"training API routes this test does not cover: {routes - covered}"
    for r in seen_by_b:
        for name, value in a_ids.items():
            assert value not in r.text, f"{r.request.url}: project A's {name} in {r.text[:300]}"
    # the /v1 view: B's list holds nothing of A's, A's run is 404 (its cursor too)
    listed = client.get("/v1/training_runs", headers={"Authorization": f"Bearer {key_b}"})
    assert listed.status_code == 200 and a["model_id"] not in listed.text and b["model_id"] in listed.text
    # and A's key still reaches all of it
    ha = tinker(key_a)
    assert client.post(f"{API}/get_info", json={"model_id": a["model_id"]}, headers=ha).status_code == 200
    assert client.get(f"{API}/training_runs/{a['model_id']}/checkpoints", headers=ha).json()["checkpoints"]


def _swap(body: dict[str, Any], a: dict[str, str], nothing: dict[str, str]) -> dict[str, Any]:
    """``body`` with each of A's ids or paths replaced by the never-existing one of the same kind."""
    never = {a[k]: nothing[k] for k in a}
    return {k: never.get(v, v) if isinstance(v, str) else v for k, v in body.items()}


def _fill(path: str, ids: dict[str, str]) -> str:
    return PARAM.sub(lambda m: ids[m.group(1)], path)
