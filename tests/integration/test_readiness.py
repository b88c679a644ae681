"""The RL-readiness report through the API and a real worker (Postgres, Redis, S3, Celery): a report-only job on
the demo's data whose histogram and verdict are computed here by hand, and a training job that probes before,
drops the prompts without signal, trains its planned steps and compares after."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from grpo_core.evaluation.probe import sample_rows
from scripts.demo import split
from tests.helpers import PY_GRADER, job_body
from tests.integration.flow import all_events
from tests.integration.stack import Stack, wait_status
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# A grader that ignores the completion: a prompt passes on every sample or on none, so the report is known
# from the data alone.
EVEN_ANSWER = {
    "type": "python",
    "name": "even_answer",
    "source": "def grade(sample, item):\n    return 1.0 if int(item['answer']) % 2 == 0 else 0.0\n",
}


def upload(api: httpx.Client, rows: list[dict[str, Any]]) -> str:
    body = "\n".join(json.dumps(r) for r in rows)
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("rows.jsonl", body)})
    assert f.status_code == 201, f.text
    return str(f.json()["id"])


def test_a_report_only_job_on_the_demo_data_matches_the_hand_computed_report(worker: Stack, api: httpx.Client) -> None:
    train, _ = split()
    body = job_body(TINY_ID, upload(api, train), max_completion_tokens=8, preflight={"prompts": 20, "samples": 4})
    body["method"]["reinforcement"]["grader"] = EVEN_ANSWER
    created = api.post("/v1/fine_tuning/jobs/preflight", json=body)
    assert created.status_code == 201, created.text
    job = created.json()
    assert job["total_steps"] == 0 and job["hyperparameters"]["preflight"]["only"] is True
    done = wait_status(api, job["id"], {"succeeded", "failed", "cancelled"}, 300, worker)
    assert done["status"] == "succeeded" and done["fine_tuned_model"] is None, done

    # by hand: the job's seed picks 20 of the 57 rows; an even answer passes all 4 samples, an odd one none
    rows = [train[i] for i in sample_rows(len(train), 20, job["seed"])]
    even = sum(int(r["answer"]) % 2 == 0 for r in rows)
    rep = api.get(f"/v1/fine_tuning/jobs/{job['id']}/readiness").json()
    assert rep["requested"] is True and rep["after"] is None and rep["comparison"] is None
    before = rep["before"]
    assert before["prompts"] == 20 and before["samples_per_prompt"] == 4
    assert before["histogram"] == [20 - even, 0, 0, 0, even]
    assert before["signal_share"] == 0.0 and before["verdict"] == "not_ready"
    assert before["always_pass_share"] == pytest.approx(even / 20)
    assert before["mean_reward"] == pytest.approx(even / 20) and before["grader_error_rate"] == 0.0
    assert before["findings"][0] == "0% of prompts give GRPO a learning signal (their rewards differ within the group)"
    assert [o["row"] for o in before["outcomes"]] == [i + 1 for i in sample_rows(len(train), 20, job["seed"])]
    messages = [e["message"] for e in all_events(api, job["id"])]
    assert any(
        m.startswith("Readiness before training (20 prompts × 4 samples of the base model): not ready.")
        for m in messages
    )
    assert messages[-1].startswith("The readiness report is ready")


def test_a_job_with_preflight_drops_prompts_without_signal_trains_its_steps_and_compares_after(
    worker: Stack, api: httpx.Client
) -> None:
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(4) for b in range(3)]
    body = job_body(
        TINY_ID,
        upload(api, rows),
        max_steps=2,
        preflight={"prompts": 12, "samples": 4, "drop_zero_variance_prompts": True},
    )
    body["method"]["reinforcement"]["grader"] = dict(PY_GRADER)
    created = api.post("/v1/fine_tuning/jobs", json=body)
    assert created.status_code == 201, created.text
    done = wait_status(api, created.json()["id"], {"succeeded", "failed", "cancelled"}, 300, worker)
    assert done["status"] == "succeeded" and done["steps_done"] == 2, done
    rep = api.get(f"/v1/fine_tuning/jobs/{done['id']}/readiness").json()
    before, after, cmp = rep["before"], rep["after"], rep["comparison"]
    assert before["prompts"] == after["prompts"] == cmp["prompts"] == 12
    assert rep["dropped_rows"] == [o["row"] for o in before["outcomes"] if not o["signal"]]
    assert sum(before["histogram"]) == 12 and 0 <= before["signal_share"] <= 1
    assert cmp["solved_before"] == sum(o["passed"] >= 2 for o in before["outcomes"])
    assert cmp["solved_after"] == sum(o["passed"] >= 2 for o in after["outcomes"])
    messages = [e["message"] for e in all_events(api, done["id"])]
    start = next(i for i, m in enumerate(messages) if m.startswith("Readiness before training"))
    first_step = next(i for i, m in enumerate(messages) if m.startswith("Step 1/"))
    assert start < first_step  # the verdict comes before training
    assert any(m.startswith("Readiness after training, on the same prompts: mean reward") for m in messages)
    if rep["dropped_rows"]:
        assert any(m.startswith(f"Dropped {len(rep['dropped_rows'])} of 12 probed prompts") for m in messages)
