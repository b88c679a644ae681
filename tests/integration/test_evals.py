"""OpenAI-shaped evals through the official ``openai`` SDK's ``client.evals``, unchanged, on real services: an eval
with the demo's grader as its testing criterion, then a run of the base model and one of the demo's fine-tuned
model on the held-out questions, each run by a real Celery worker (tests/inference_stack.py trained the model)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from openai import OpenAI

from grpo_core.models.catalog import SMOLLM2_ID
from scripts.demo import GRADER_SOURCE
from tests.inference_stack import ServedDemo

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ITEM_SCHEMA = {
    "type": "object",
    "properties": {"prompt": {"type": "string"}, "answer": {"type": "string"}},
    "required": ["prompt", "answer"],
}


def wait_run(client: OpenAI, eval_id: str, run_id: str, timeout: float = 600) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.evals.runs.retrieve(run_id, eval_id=eval_id)
        if run.status in ("completed", "failed", "canceled"):
            return run
        time.sleep(1)
    raise TimeoutError(f"eval run {run_id} still {run.status}")


def test_an_eval_of_the_base_and_the_fine_tuned_model_through_the_openai_sdk(served_demo: ServedDemo) -> None:
    client = OpenAI(base_url=served_demo.stack.url + "/v1", api_key=served_demo.api_key)
    lines = "".join(json.dumps({"item": row}) + "\n" for row in served_demo.held_out).encode()
    data = client.files.create(file=("held_out.jsonl", lines), purpose="evals")
    ev = client.evals.create(
        name="demo arithmetic",
        data_source_config={"type": "custom", "item_schema": ITEM_SCHEMA, "include_sample_schema": True},
        testing_criteria=[  # the demo's own grader: 1 for the right first number (pass), else 0
            {"type": "python", "name": "first_number", "source": GRADER_SOURCE, "pass_threshold": 1.0}
        ],
    )
    assert ev.data_source_config.type == "custom" and ev.data_source_config.schema_["required"] == ["item", "sample"]
    served_demo.stack.start_worker()
    try:
        runs = {}
        for label, model in (("base", SMOLLM2_ID), ("tuned", served_demo.job["fine_tuned_model"])):
            run = client.evals.runs.create(
                ev.id,
                name=label,
                data_source={
                    "type": "completions",
                    "source": {"type": "file_id", "id": data.id},
                    "input_messages": {
                        "type": "template",
                        "template": [{"role": "user", "content": "{{item.prompt}}"}],
                    },
                    "model": model,
                    "sampling_params": {"temperature": 0, "max_completion_tokens": 24, "seed": 0},
                },
            )
            assert run.status == "queued" and run.model == model
            runs[label] = run
        done = {label: wait_run(client, ev.id, run.id) for label, run in runs.items()}
    finally:
        served_demo.stack.stop_worker()  # the inference tests want both cores for vLLM

    n = len(served_demo.held_out)
    for label, run in done.items():
        assert run.status == "completed", (label, run.error)
        counts = run.result_counts
        assert counts.total == n and counts.passed + counts.failed + counts.errored == n and counts.errored == 0
        (criterion,) = run.per_testing_criteria_results
        assert criterion.testing_criteria == "first_number" and criterion.passed == counts.passed
        assert run.per_model_usage[0].invocation_count == n
        items = list(client.evals.runs.output_items.list(run.id, eval_id=ev.id, limit=100))
        assert sorted(i.datasource_item_id for i in items) == list(range(n))
        for item in items:
            result = item.results[0]
            assert result.name == "first_number" and result.passed == (result.score >= 1.0)
            assert item.status == ("pass" if result.passed else "fail")
            assert item.sample.output[0].role == "assistant" and item.sample.finish_reason in ("stop", "length")
            assert item.datasource_item == served_demo.held_out[item.datasource_item_id]
            assert item.sample.input[0].content == served_demo.held_out[item.datasource_item_id]["prompt"]
        passing = client.evals.runs.output_items.list(run.id, eval_id=ev.id, status="pass", limit=100)
        assert len(list(passing)) == counts.passed
    # greedy, on the 24 held-out questions: the fine-tuned model answers clearly more of them right
    assert done["tuned"].result_counts.passed > done["base"].result_counts.passed + n // 4, {
        k: r.result_counts for k, r in done.items()
    }
    # the eval figures of docs/benchmarks.md (pytest -s)
    print({k: r.result_counts.model_dump() for k, r in done.items()})
    listed = {r.id for r in client.evals.runs.list(ev.id)}
    assert listed == {runs["base"].id, runs["tuned"].id}
