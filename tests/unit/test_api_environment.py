"""A job's ``environment`` at the API: stored with the job and sent to the worker, or refused with a 4xx that
names the field before any GPU time (its source is loaded in the service's sandbox at creation)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

TOOL = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
SOURCE = "def add(a: int, b: int) -> int:\n    return a + b\n"


def upload(client: TestClient, rows: list[dict]) -> str:
    r = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(rows))})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def create(client: TestClient, file_id: str, environment: dict) -> object:
    body = job_body(TINY_ID, file_id)
    body["method"]["reinforcement"]["environment"] = environment
    return client.post("/v1/fine_tuning/jobs", json=body)


def test_an_environment_is_stored_and_reaches_the_worker(client: TestClient) -> None:
    rows = [{**r, "tools": [TOOL]} for r in ARITH_ROWS]
    fid = upload(client, rows)
    r = create(client, fid, {"source": SOURCE, "max_turns": 3})
    assert r.status_code == 201, r.text
    env = r.json()["method"]["reinforcement"]["environment"]
    assert env["source"] == SOURCE and env["max_turns"] == 3 and env["max_total_tokens"] == 1024
    mine = {"worker_id": "w", "claim_id": "claim-one"}
    claim = client.post(f"/internal/jobs/{r.json()['id']}/claim", json=mine, headers={"Authorization": "Bearer t0k"})
    assert claim.status_code == 200, claim.text
    assert claim.json()["environment"] == env


@pytest.mark.parametrize(
    ("environment", "status", "param", "message"),
    [
        ({"source": "def add(:\n"}, 422, "method.reinforcement.environment.source", "syntax error at line 1"),
        ({"source": "X = 1\n"}, 422, "method.reinforcement.environment.source", "neither respond"),
        ({"source": "import nope\n"}, 422, "method.reinforcement.environment.source", "No module named 'nope'"),
        ({"source": "def sub(a, b):\n    return a - b\n"}, 422, "training_file", "offers the tool 'add'"),
        ({"source": SOURCE, "max_turns": 0}, 422, "method.reinforcement.environment.max_turns", "greater than"),
        ({"source": SOURCE, "surprise": 1}, 422, "method.reinforcement.environment.surprise", "Extra inputs"),
    ],
)
def test_a_bad_environment_is_refused_naming_the_field(
    client: TestClient, environment: dict, status: int, param: str, message: str
) -> None:
    fid = upload(client, [{**r, "tools": [TOOL]} for r in ARITH_ROWS])
    r = create(client, fid, environment)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["param"] == param and message in err["message"], err
    assert client.get("/v1/fine_tuning/jobs").json()["data"] == []  # nothing half-stored


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"prompt": "x", "tools": {"name": "add"}}, "'tools' must be a list of function tools"),
        ({"prompt": "x", "tools": [{"type": "function", "function": {}}]}, "tools[0].function needs a string 'name'"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content[0] must be a text part",
        ),
        (
            {"messages": [{"role": "user", "content": None, "tool_calls": [{"function": {"name": "add"}}]}]},
            "messages[0].tool_calls must be a list on an assistant message",
        ),
    ],
)
def test_rows_with_bad_tools_or_messages_are_refused_at_upload(client: TestClient, row: dict, reason: str) -> None:
    r = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", json.dumps(row).encode())})
    assert r.status_code == 400, r.text
    assert reason in r.json()["error"]["message"]


def test_openai_shaped_rows_are_accepted_at_upload(client: TestClient) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    row = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "1+2?"}]},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "content": "3"},
            {"role": "assistant", "content": "3"},
            {"role": "user", "content": "2+2?"},
        ],
        "tools": [TOOL],
        "answer": "4",
    }
    assert upload(client, [row] * 4)
