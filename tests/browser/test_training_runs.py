"""The dashboard shows the training API's runs beside the jobs: a loop written with the ``tinker`` SDK (unmodified)
trains three steps on the real worker and reports its reward for each; the list shows the run, and its page draws
the loss of its calls and the reported reward, and lists its checkpoint."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import tinker
from playwright.sync_api import Page
from tinker import types

from tests.integration.stack import Stack
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
DATA = [
    types.Datum(
        model_input=types.ModelInput.from_ints([1, 3, 13, 3, 14, 4]),
        loss_fn_inputs={"target_tokens": [3, 13, 3, 14, 4, 0], "weights": [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]},
    )
]


def test_a_training_api_run_is_listed_beside_the_jobs_with_its_curves(
    page: Page, stack: Stack, api_key: str, artifacts: Path, page_errors: list[str]
) -> None:
    stack.start_worker()
    with tinker.ServiceClient(base_url=stack.url, api_key=f"tml-{api_key}") as service:
        training = service.create_lora_training_client(base_model=TINY_ID, rank=4).result()
        for step in range(1, 4):
            training.forward_backward(DATA, "cross_entropy")
            training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
            reported = httpx.post(
                f"{stack.url}/v1/training_runs/{training.model_id}/metrics",
                json={"step": step, "metrics": {"reward": step / 4}},
                headers={"Authorization": f"Bearer {api_key}"},
            )
            assert reported.status_code == 200, reported.text
        path = training.save_weights_for_sampler("dashboard").result().path
        run_id = training.model_id

    page.goto(stack.url + "/")
    page.fill('input[name="api_key"]', api_key)
    page.click('button[type="submit"]')
    row = page.locator(f'tr[data-run-id="{run_id}"]')
    row.wait_for()
    assert "finished" in row.inner_text() and TINY_ID in row.inner_text()  # the with-block closed the session
    row.get_by_role("link", name=run_id).click()
    page.get_by_test_id("run-page").wait_for()
    page.locator('[data-testid="chart-run-loss"][data-points="3"]').wait_for()
    page.locator('[data-testid="chart-run-reported-reward"][data-points="3"]').wait_for()
    assert path in page.get_by_test_id("run-checkpoints").inner_text()
    page.screenshot(path=str(artifacts / "10-training-run.png"), full_page=True)
    assert not page_errors


def test_the_fleet_page_shows_the_worker_and_its_tenants_to_the_operator(
    page: Page, stack: Stack, api_key: str, artifacts: Path, page_errors: list[str]
) -> None:
    if stack.worker is None:
        stack.start_worker()
    page.goto(stack.url + "/")
    if page.locator('input[name="api_key"]').count():
        page.fill('input[name="api_key"]', api_key)
        page.click('button[type="submit"]')
    page.get_by_role("link", name="Fleet").click()
    page.get_by_test_id("fleet-token").wait_for()
    page.fill('input[name="admin_token"]', api_key)  # a project's key is not the operator's token
    page.get_by_test_id("fleet-token").get_by_role("button").click()
    page.get_by_test_id("error").filter(has_text="not accepted").wait_for()
    assert page.get_by_test_id("logout").is_visible()  # the refused token did not sign the user out

    with tinker.ServiceClient(base_url=stack.url, api_key=f"tml-{api_key}") as service:
        service.create_lora_training_client(base_model=TINY_ID, rank=4).result()  # a worker holds the session now
        page.fill('input[name="admin_token"]', stack.env["ADMIN_TOKEN"])
        page.get_by_test_id("fleet-token").get_by_role("button").click()
        row = page.get_by_test_id("fleet-worker")
        row.wait_for()
        cells = row.locator("td").all_inner_texts()
        assert cells[1:5] == ["1", "0", "1", "1"] and cells[5] == TINY_ID, cells  # tenants, jobs, sessions, projects
        page.screenshot(path=str(artifacts / "11-fleet.png"), full_page=True)
    page.get_by_test_id("fleet-empty").wait_for(timeout=30_000)  # the closed session left the worker
    assert not page_errors
