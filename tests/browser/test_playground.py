"""The job page's playground against the real stack: the demo job trained and served by vLLM
(tests/inference_stack.py). One held-out question to the base model and to the fine-tuned model side by side,
streamed, then scored with the job's own grader from the item's columns; then two checkpoints."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Page

from grpo_core.models.catalog import SMOLLM2_ID
from tests.inference_stack import ServedDemo


def test_playground_compares_base_and_fine_tuned_with_grader_scores(
    page: Page, served_demo: ServedDemo, artifacts: Path, page_errors: list[str]
) -> None:
    job = served_demo.job
    page.goto(served_demo.stack.url + "/")
    page.get_by_test_id("login").wait_for()
    page.fill('input[name="api_key"]', served_demo.api_key)
    page.click('button[type="submit"]')
    page.get_by_role("heading", name="Fine-tuning jobs").wait_for()
    page.goto(f"{served_demo.stack.url}/#/jobs/{job['id']}")
    playground = page.get_by_test_id("playground")
    playground.wait_for()
    assert page.get_by_test_id("model-a").input_value() == SMOLLM2_ID
    assert page.get_by_test_id("model-b").input_value() == job["fine_tuned_model"]

    row = served_demo.held_out[2]
    page.get_by_test_id("prompt").fill(row["prompt"])
    page.get_by_test_id("item").fill(json.dumps({"answer": row["answer"]}))
    page.get_by_test_id("ask").click()
    score_a, score_b = page.get_by_test_id("score-a"), page.get_by_test_id("score-b")
    score_a.wait_for(timeout=120_000)
    score_b.wait_for(timeout=120_000)
    answer_a, answer_b = page.get_by_test_id("answer-a").inner_text(), page.get_by_test_id("answer-b").inner_text()
    assert answer_a.strip() and answer_b.strip()
    # the scores are the demo grader's on what is shown: 1 when the last number is the sum
    for answer, score in ((answer_a, score_a), (answer_b, score_b)):
        numbers = re.findall(r"-?\d+", answer)  # scripts/demo_grader.py
        expected = 1.0 if numbers and numbers[-1] == row["answer"] else 0.0
        assert float(score.inner_text()) == expected, (answer, score.inner_text())
    page.screenshot(path=str(artifacts / "10-playground.png"), full_page=True)

    # two checkpoints side by side: the choices hold every checkpoint
    options = page.get_by_test_id("model-a").locator("option").all_inner_texts()
    assert sum("checkpoint step" in o for o in options) >= 2
    page.get_by_test_id("model-a").select_option(label="checkpoint step 10")
    page.get_by_test_id("item").fill("")
    page.get_by_test_id("ask").click()
    page.get_by_test_id("ask").get_by_text("Ask both").wait_for(timeout=120_000)
    assert page.get_by_test_id("answer-a").inner_text().strip()
    assert page.get_by_test_id("score-a").count() == 0  # no item columns: no score
    assert not page_errors
