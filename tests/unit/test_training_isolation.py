"""Isolation of the training API (``/api/v1``, the ``tinker`` SDK's protocol): project B's key, given project A's
sessions, runs, sampling clients, futures and checkpoints, in a path or in a body, gets the 404 an id that never
existed gets, and B's lists hold nothing of A's. The routes are read from ``app.routes``: a route added later and
not covered here fails the test (as tests/unit/test_tenant_isolation.py does for ``/v1``).

A worker is played through the internal API (claim, take the requests, post results), so A's run, its checkpoints
and its finished futures are real rows.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from tests.tiny_model import TINY_ID
from tests.training_objects import API, PARAM, fwdbwd_body, make_training_objects, tinker
from tests.unit.test_tenant_isolation import api_routes, assert_like_never, fake
from tests.unit.test_tenants import new_key


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
