"""Evals: the template and grading logic (grpo_core.evaluation.evals) on a scripted engine through
grpo_core.rollout.scored.sample_and_score, and the API's rules on the embedded defaults: what is refused with which
field, a run's claim, items and counts (checked by hand), cancel fencing. tests/integration/test_evals.py runs
real models through the openai SDK."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient

from grpo_core.evaluation.evals import Criterion, TemplateError, item_of, render, run_items
from grpo_core.rewards.base import GraderResult
from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.scored import sample_and_score
from tests.helpers import PY_GRADER, job_body, jsonl
from tests.tiny_model import TINY_ID

WORKER = {"Authorization": "Bearer t0k"}
TEMPLATE = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "{{item.q}} ({{item.meta.level}})"}]


class Scripted:
    """A rollout engine that answers each prompt with its texts in ``answers``: 3 prompt tokens, 1 completion
    token, stopped."""

    name = "scripted"

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        texts = [t for p in prompts for t in self.answers[p]]
        ones = torch.ones(len(texts), 3, dtype=torch.long)
        return Rollout(ones, ones, ones[:, :1], ones[:, :1], torch.zeros(len(texts), dtype=torch.bool), texts)


class Exact:
    """A grader: 1 when the text is the item's answer, 0 otherwise, an error on 'boom'."""

    name = "exact"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        errors: list[Any] = [ValueError("boom") if t == "boom" else None for t in texts]
        scores = [None if t == "boom" else float(t == r["a"]) for t, r in zip(texts, rows, strict=True)]
        return GraderResult(scores, errors)

    def close(self) -> None:
        pass


def test_render_fills_item_fields_and_names_a_missing_one() -> None:
    item = {"q": "2+2", "meta": {"level": 1}}
    assert render(TEMPLATE, item)[1] == {"role": "user", "content": "2+2 (1)"}
    with pytest.raises(TemplateError, match=r"item\.meta\.level"):
        render(TEMPLATE, {"q": "x", "meta": {}})
    assert item_of({"item": {"q": 1}}) == {"q": 1} and item_of({"q": 1}) == {"q": 1}


def test_items_pass_fail_or_error_by_every_sample_and_criterion() -> None:
    answers = {"1": ["4", "4"], "2": ["4", "5"], "3": ["boom", "4"]}

    def generate(messages: list[list[dict[str, str]]], items: list[dict[str, Any]], graders: list[Any]) -> Any:
        prompts = [m[1]["content"][0] for m in messages]
        return sample_and_score(Scripted(answers), prompts, items, graders, Sampling(2, 1, 0.0, 1.0, seed=0))

    rows = [(i, {"item": {"q": str(i), "a": "4", "meta": {"level": 0}}}) for i in (1, 2, 3)]
    rows.append((4, {"item": {"q": "4"}}))  # no meta.level: a template error, the run goes on
    out = run_items(rows, TEMPLATE, generate, [Criterion("exact", Exact(), 1.0)])
    assert [o.status for o in out] == ["pass", "fail", "error", "error"]
    assert [r.passed for r in out[1].results] == [True, False]
    assert out[2].results[0].error == "boom" and out[3].error == "the item has no field item.meta.level"
    assert out[0].samples[0].usage == {
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "total_tokens": 4,
        "cached_tokens": 0,
    }
    assert out[0].input[1]["content"] == "1 (0)" and out[0].datasource_item_id == 1


def make_eval(client: TestClient, **extra: Any) -> Any:
    body = {
        "name": "arith",
        "data_source_config": {"type": "custom", "item_schema": {"type": "object"}},
        "testing_criteria": [PY_GRADER | {"pass_threshold": 0.5}],
    } | extra
    return client.post("/v1/evals", json=body)


def run_body(model: str = TINY_ID, **source: Any) -> dict[str, Any]:
    return {
        "data_source": {
            "type": "completions",
            "source": source or {"type": "file_content", "content": [{"item": {"q": "1+1="}}, {"item": {"q": "2+2="}}]},
            "input_messages": {"type": "template", "template": [{"role": "user", "content": "{{item.q}}"}]},
            "model": model,
            "sampling_params": {"n": 2, "temperature": 0.7, "max_completion_tokens": 8},
        }
    }


def test_what_is_refused_names_the_field(client: TestClient) -> None:
    bad = make_eval(client, data_source_config={"type": "logs"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "data_source_config"
    bad = make_eval(client, testing_criteria=[{"type": "nope"}])
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "testing_criteria[0]"
    dup = make_eval(client, testing_criteria=[PY_GRADER, PY_GRADER])
    assert dup.status_code == 400 and dup.json()["error"]["param"] == "testing_criteria[1].name"
    ev = make_eval(client).json()
    assert ev["object"] == "eval" and ev["testing_criteria"][0]["pass_threshold"] == 0.5
    assert ev["data_source_config"]["schema"]["required"] == ["item"]
    runs = f"/v1/evals/{ev['id']}/runs"
    r = client.post(runs, json={"data_source": {"type": "jsonl", "source": {}}})
    assert r.status_code == 400 and r.json()["error"]["param"] == "data_source.type"
    r = client.post(runs, json=run_body(model="ft:nope:x:ftjob-0000"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = client.post(runs, json=run_body(type="file_id", id="file-000"))
    assert r.status_code == 404 and r.json()["error"]["param"] == "data_source.source.id"
    assert client.post("/v1/evals/eval-000/runs", json=run_body()).status_code == 404

    up = client.post("/v1/files", data={"purpose": "evals"}, files={"file": ("e.jsonl", b'{"item": 3}\n')})
    assert up.status_code == 400 and "'item' must be a JSON object" in up.json()["error"]["message"]
    f = client.post("/v1/files", data={"purpose": "evals"}, files={"file": ("e.jsonl", jsonl([{"item": {"q": 1}}]))})
    assert f.status_code == 201
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, f.json()["id"]))
    assert job.status_code == 400 and job.json()["error"]["param"] == "training_file"


def test_a_run_is_claimed_filled_and_counted_and_a_cancel_stops_its_writes(client: TestClient) -> None:
    ev = make_eval(client).json()
    run = client.post(f"/v1/evals/{ev['id']}/runs", json=run_body()).json()
    assert run["status"] == "queued" and run["result_counts"] == {"total": 0, "errored": 0, "failed": 0, "passed": 0}
    url = f"/internal/evals/runs/{run['id']}"
    claim = client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-aaaa"}, headers=WORKER).json()
    assert claim["base_model"] == TINY_ID and claim["adapter_key"] is None and claim["sampling"]["n"] == 2
    assert claim["criteria"][0]["name"] == "has_digit" and claim["criteria"][0]["pass_threshold"] == 0.5
    again = client.post(f"{url}/claim", json={"worker_id": "w2", "claim_id": "claim-bbbb"}, headers=WORKER)
    assert again.status_code == 409 and again.json()["error"]["code"] == "stale_claim"

    def item(i: int, scores: list[float | None]) -> dict[str, Any]:
        return {
            "datasource_item_id": i,
            "datasource_item": {"q": str(i)},
            "status": "error" if None in scores else ("pass" if min(s or 0.0 for s in scores) >= 0.5 else "fail"),
            "input": [{"role": "user", "content": str(i)}],
            "samples": [
                {
                    "output": [{"role": "assistant", "content": "x"}],
                    "finish_reason": "stop",
                    "usage": {"total_tokens": 5},
                }
            ]
            * len(scores),
            "results": [
                {"name": "has_digit", "sample": j, "score": s, "passed": s is not None and s >= 0.5}
                for j, s in enumerate(scores)
            ],
        }

    items = [item(0, [1.0, 1.0]), item(1, [1.0, 0.0]), item(2, [None, 1.0])]
    assert client.post(f"{url}/items", json={"claim_id": "claim-aaaa", "items": items}, headers=WORKER).json() == {
        "added": 3
    }
    # a retried post adds nothing; a post under another claim is refused
    assert client.post(f"{url}/items", json={"claim_id": "claim-aaaa", "items": items[:1]}, headers=WORKER).json() == {
        "added": 0
    }
    other = client.post(f"{url}/items", json={"claim_id": "claim-bbbb", "items": items}, headers=WORKER)
    assert other.status_code == 409
    done = client.post(f"{url}/finish", json={"claim_id": "claim-aaaa", "status": "completed"}, headers=WORKER)
    assert done.json() == {"status": "completed"}
    got = client.get(f"/v1/evals/{ev['id']}/runs/{run['id']}").json()
    assert got["status"] == "completed"
    assert got["result_counts"] == {"total": 3, "errored": 1, "failed": 1, "passed": 1}
    assert got["per_testing_criteria_results"] == [{"testing_criteria": "has_digit", "passed": 1, "failed": 2}]
    assert got["per_model_usage"][0]["invocation_count"] == 6 and got["per_model_usage"][0]["total_tokens"] == 30
    listed = client.get(f"/v1/evals/{ev['id']}/runs/{run['id']}/output_items", params={"status": "fail"}).json()
    (failed,) = listed["data"]
    assert failed["object"] == "eval.run.output_item" and failed["datasource_item_id"] == 1
    assert failed["sample"]["temperature"] == 0.7 and len(failed["samples"]) == 2
    assert [r["passed"] for r in failed["results"]] == [True, False]

    # cancel: the worker's next write is refused, and the run stays canceled
    second = client.post(f"/v1/evals/{ev['id']}/runs", json=run_body()).json()
    url2 = f"/internal/evals/runs/{second['id']}"
    client.post(f"{url2}/claim", json={"worker_id": "w", "claim_id": "claim-cccc"}, headers=WORKER)
    assert client.post(f"/v1/evals/{ev['id']}/runs/{second['id']}").json()["status"] == "canceled"
    late = client.post(f"{url2}/items", json={"claim_id": "claim-cccc", "items": items}, headers=WORKER)
    assert late.status_code == 409 and late.json()["error"]["code"] == "stale_claim"
    deleted = client.delete(f"/v1/evals/{ev['id']}")
    assert deleted.json() == {"object": "eval.deleted", "deleted": True, "eval_id": ev["id"]}
    assert client.get(f"/v1/evals/{ev['id']}/runs/{run['id']}").status_code == 404


def test_the_reaper_requeues_a_run_whose_worker_died_and_gives_up_after_three_claims(
    client: TestClient, settings: Any
) -> None:
    import time

    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session

    from api.reaper import reap

    class Rung:
        def __init__(self) -> None:
            self.evals: list[str] = []

        def ring(self, job_id: str) -> None:
            raise AssertionError("no job here")

        def join(self, job_id: str, epoch: int) -> None:
            raise AssertionError("no job here")

        def ring_eval(self, run_id: str) -> None:
            self.evals.append(run_id)

        def ring_session(self, session_id: str) -> None:
            raise AssertionError("no training session here")

    ev = make_eval(client).json()
    run = client.post(f"/v1/evals/{ev['id']}/runs", json=run_body()).json()
    url = f"/internal/evals/runs/{run['id']}"
    engine = create_engine(settings.db_url)

    def sql(statement: str) -> None:
        with engine.begin() as conn:
            conn.execute(text(statement), {"id": run["id"]})

    for attempt in range(1, 4):
        claimed = client.post(
            f"{url}/claim", json={"worker_id": "w", "claim_id": f"claim-{attempt:04d}"}, headers=WORKER
        )
        assert claimed.status_code == 200, claimed.text
        sql(f"update eval_runs set lease_expires_at = {int(time.time()) - 1} where id = :id")  # its worker died
        with Session(engine) as session:
            bell = Rung()
            reap(session, bell, settings)
        got = client.get(f"/v1/evals/{ev['id']}/runs/{run['id']}").json()
        if attempt < 3:
            assert got["status"] == "queued" and bell.evals == [run["id"]], (attempt, got)
        else:
            assert got["status"] == "failed" and got["error"]["code"] == "attempts_exhausted" and bell.evals == []
    # a queued run whose doorbell was never answered is rung again after requeue_after_seconds
    second = client.post(f"/v1/evals/{ev['id']}/runs", json=run_body()).json()
    with engine.begin() as conn:
        conn.execute(text("update eval_runs set enqueued_at = 0 where id = :id"), {"id": second["id"]})
    with Session(engine) as session:
        bell = Rung()
        reap(session, bell, settings)
    assert bell.evals == [second["id"]]
    engine.dispose()
