"""Grader pre-flight over HTTP (OpenAI's graders/validate and graders/run) and the job's grader dry run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from api.core.settings import ApiSettings
from api.main import create_app
from tests.helpers import ARITH_ROWS, job_body, jsonl, migrate
from tests.tiny_model import TINY_ID

# OpenAI's documented examples (graders guide), with the rewards they must give.
STRING_CHECK = {
    "type": "string_check",
    "name": "Example string check grader",
    "input": "{{sample.output_text}}",
    "reference": "{{item.label}}",
    "operation": "eq",
}
TEXT_SIMILARITY = {
    "type": "text_similarity",
    "name": "Example text similarity grader",
    "input": "{{sample.output_text}}",
    "reference": "{{item.reference_answer}}",
    "evaluation_metric": "fuzzy_match",
}
# The python example of OpenAI's graders guide (rapidfuzz is in the sandbox's environment, as in OpenAI's image).
PYTHON = {
    "type": "python",
    "name": "Example python grader",
    "source": (
        "from rapidfuzz import fuzz, utils\n\n"
        "def grade(sample, item) -> float:\n"
        "    output_text = sample['output_text']\n"
        "    reference_answer = item['reference_answer']\n"
        "    return fuzz.WRatio(output_text, reference_answer, processor=utils.default_process) / 100.0\n"
    ),
}
MULTI = {
    "type": "multi",
    "graders": {
        "name": {
            "name": "name_grader",
            "type": "text_similarity",
            "input": "{{sample.output_json.name}}",
            "reference": "{{item.name}}",
            "evaluation_metric": "fuzzy_match",
        },
        "email": {
            "name": "email_grader",
            "type": "string_check",
            "input": "{{sample.output_json.email}}",
            "reference": "{{item.email}}",
            "operation": "eq",
        },
    },
    "calculate_output": "(name + email) / 2",
}


@pytest.fixture
def client(tmp_path: Path, catalog_dir: Path) -> Iterator[TestClient]:
    s = ApiSettings(state_dir=tmp_path / "state", model_catalog_dir=catalog_dir, worker_token="t0k")
    migrate(s.db_url)
    with TestClient(create_app(s)) as c:
        c.db_url = s.db_url  # type: ignore[attr-defined]
        yield c


def run(client: TestClient, grader: dict[str, Any], sample: str, item: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/fine_tuning/alpha/graders/run", json={"grader": grader, "model_sample": sample, "item": item})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize(
    ("grader", "sample", "item", "reward"),
    [
        (STRING_CHECK, "fraud", {"label": "fraud"}, 1.0),
        (STRING_CHECK, "not fraud", {"label": "fraud"}, 0.0),
        # normalised Indel similarity by hand: LCS 17 of lengths 23 + 22 -> 1 - (45 - 34) / 45
        (TEXT_SIMILARITY, "fuzzy wuzzy had no hair", {"reference_answer": "fuzzy wuzzy was a bear"}, 34 / 45),
        (PYTHON, "Fuzzy Wuzzy", {"reference_answer": "fuzzy wuzzy"}, 1.0),  # default_process lower-cases
        (MULTI, '{"name": "John Doe", "email": "john@doe.com"}', {"name": "John Doe", "email": "john@doe.com"}, 1.0),
    ],
)
def test_openai_examples_round_trip_through_graders_run(
    client: TestClient, grader: dict[str, Any], sample: str, item: dict[str, Any], reward: float
) -> None:
    out = run(client, grader, sample, item)
    assert out["reward"] == pytest.approx(reward, abs=1e-3)
    assert out["metadata"]["type"] == grader["type"] and not any(
        v for k, v in out["metadata"]["errors"].items() if k.endswith("_error")
    )
    if grader is MULTI:
        assert out["sub_rewards"] == {"name": 1.0, "email": 1.0}


def test_graders_run_flags_a_missing_variable(client: TestClient) -> None:
    out = run(client, STRING_CHECK, "fraud", {"category": "fraud"})
    assert out["reward"] == 0.0 and out["metadata"]["errors"]["invalid_variable_error"] is True


def test_graders_validate_echoes_and_rejects_with_the_reason(client: TestClient) -> None:
    ok = client.post("/v1/fine_tuning/alpha/graders/validate", json={"grader": MULTI})
    assert ok.status_code == 200 and ok.json()["grader"]["calculate_output"] == "(name + email) / 2"
    bad = client.post(
        "/v1/fine_tuning/alpha/graders/validate",
        json={"grader": {**MULTI, "calculate_output": "name + __import__('os')"}},
    )
    assert bad.status_code == 422 and "calculate_output" in bad.json()["error"]["message"]
    judge = client.post(
        "/v1/fine_tuning/alpha/graders/validate",
        json={"grader": {"type": "score_model", "model": "m", "input": [{"role": "user", "content": "x"}]}},
    )
    assert judge.status_code == 422 and judge.json()["error"]["code"] == "grader_unavailable"


def _jobs(client: TestClient) -> int:
    with create_engine(client.db_url).connect() as conn:  # type: ignore[attr-defined]
        return conn.execute(text("select count(*) from jobs")).scalar_one()


def test_job_creation_dry_runs_the_grader_on_training_rows(client: TestClient) -> None:
    fid = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}
    ).json()["id"]
    body = job_body(TINY_ID, fid)
    body["method"]["reinforcement"]["grader"] = {"type": "string_check", "reference": "{{item.solution}}"}
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["param"] == "method.reinforcement.grader" and "training row 1" in err["message"]
    assert "item.solution" in err["message"] and _jobs(client) == 0  # nothing stored


def test_reward_weights_must_match_the_reward_columns(client: TestClient) -> None:
    fid = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}
    ).json()["id"]
    body = job_body(TINY_ID, fid, reward_weights=[1.0, 2.0])
    body["method"]["reinforcement"]["grader"] = {"type": "string_check", "reference": "{{item.answer}}"}
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 422 and r.json()["error"]["param"].endswith("reward_weights")
    body["method"]["reinforcement"]["grader"] = {
        "type": "multi",
        "graders": {"exact": {"type": "string_check", "reference": "{{item.answer}}"}, "fmt": {"type": "format"}},
    }
    ok = client.post("/v1/fine_tuning/jobs", json=body)
    assert ok.status_code == 201, ok.text


def test_graders_run_reports_a_python_runtime_error(client: TestClient) -> None:
    out = run(client, PYTHON, "x", {"other": 1})
    errors = out["metadata"]["errors"]
    assert out["reward"] == 0.0 and errors["python_grader_runtime_error"] is True
    assert "KeyError" in errors["python_grader_runtime_error_details"]


def test_validate_and_job_creation_reject_python_that_fails_to_load(client: TestClient) -> None:
    bad = {"type": "python", "source": "import not_a_module\ndef grade(sample, item):\n    return 1.0\n"}
    r = client.post("/v1/fine_tuning/alpha/graders/validate", json={"grader": bad})
    assert r.status_code == 422 and "not_a_module" in r.json()["error"]["message"]
    fid = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}
    ).json()["id"]
    body = job_body(TINY_ID, fid)
    body["method"]["reinforcement"]["grader"] = bad
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 422 and "failed to load" in r.json()["error"]["message"] and _jobs(client) == 0
