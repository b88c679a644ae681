"""The training API's objects made through its public routes, with a worker played through the internal API (claim,
take the requests, post results): what the isolation tests and the session tests build on."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.training_api.paths import TinkerPath, object_key
from api.training_api.tinker_pb2 import ForwardBackwardRequest
from runtime.storage import LocalStore
from tests.tiny_model import TINY_ID

API = "/api/v1"
WORKER = {"Authorization": "Bearer t0k"}
PARAM = re.compile(r"{(\w+)(?::path)?}")


def tinker(key: str) -> dict[str, str]:
    return {"X-API-Key": f"tml-{key}"}


# What a result of each kind must hold (runtime.training_api.Result), for a worker played by a test.
RESULT_FIELDS: dict[str, dict[str, Any]] = {
    "forward_backward": {"logprobs": [], "metrics": {}},
    "optim_step": {"metrics": {}},
    "save_weights": {"size_bytes": 0},
    "sample": {"sequences": []},
}


def result_of(req: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The worker's typed result of request ``req`` (a WorkItem as the worker took it, runtime.training_api): its
    kind, what a result of that kind must hold, and ``fields`` over those."""
    kind = req["request"]["kind"]
    return {"kind": kind, **RESULT_FIELDS.get(kind, {}), **fields}


def serve_one(client: TestClient, session_id: str, **fields: Any) -> None:
    """Play the session's worker for its next request: take it and post its result (``result_of``)."""
    url = f"/internal/training/sessions/{session_id}"
    nxt = client.post(f"{url}/next", json={"claim_id": "c-1", "wait_seconds": 0}, headers=WORKER)
    assert nxt.status_code == 200 and nxt.json()["request"], nxt.text
    req = nxt.json()["request"]
    body = {"claim_id": "c-1", "result": result_of(req, **fields)}
    posted = client.post(f"{url}/results/{req['id']}", json=body, headers=WORKER)
    assert posted.status_code == 200, posted.text


def fwdbwd_body(model_id: str, seq_id: int = 0) -> bytes:
    """A forward_backward body as the SDK encodes it (seq_id 0: not numbered)."""
    msg = ForwardBackwardRequest(model_id=model_id, seq_id=seq_id, loss_fn="cross_entropy")
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
    serve_one(client, sid)
    saved = client.post(f"{API}/save_weights", json={"model_id": run_id, "path": "s1"}, headers=h).json()
    serve_one(client, sid, size_bytes=8)
    client.post(f"{API}/save_weights_for_sampler", json={"model_id": run_id, "path": "s1"}, headers=h)
    serve_one(client, sid, size_bytes=8)
    listed = client.get(f"{API}/training_runs/{run_id}/checkpoints", headers=h).json()["checkpoints"]
    if store is not None:
        for c in listed:  # what the worker uploaded before posting the saves' results
            blob = Path(store.root).parent / f"{c['id']}.blob"
            blob.write_bytes(f"tar of {c['tinker_path']}".encode())
            store.put_file(object_key(project_of(client, key), TinkerPath.parse(c["tinker_path"])), blob)
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


def project_of(client: TestClient, key: str) -> str:
    """The project ``key`` opens (what /v1/training_runs reports as each run's owner, model_owner)."""
    runs = client.get(f"{API}/training_runs", headers=tinker(key)).json()["training_runs"]
    return str(runs[0]["model_owner"])
