"""The dashboard in a real headless chromium against the real API and a real worker (tiny model).

One user's session, in order: sign in (a wrong key is refused), find a job created through the API in the jobs
list, open it and watch its reward curve gain points as the worker's steps land (the worker is started only
once the page is open, so every point arrives live over the event stream), see the health warning, read the
rollout viewer, download a checkpoint's adapter, pause/resume/cancel a second job from its page, and create a
job with the form (a bad value first: the API's error, naming the field, is shown).
"""

from __future__ import annotations

import math
import tarfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.stack import Stack, wait_status
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STEPS = 12


# The tiny model takes a few ms per step, faster than the event stream's 1 s poll: a grader that takes its time
# (0.1 s per sample, 8 samples a step) lets the test see the steps land one by one.
SLOW_GRADER = {
    "type": "python",
    "name": "has_digit",
    "source": (
        "import time\n"
        "def grade(sample, item):\n"
        "    time.sleep(0.1)\n"
        "    t = sample['output_text']\n"
        "    return sum(c.isdigit() for c in t) / max(len(t), 1)\n"
    ),
}
# Two reward columns (a multi without a formula): the reward chart draws each grader's line beside the total.
TWO_GRADERS = {
    "type": "multi",
    "graders": {"has_digit": SLOW_GRADER, "short": {"type": "length", "mode": "linear", "target": 3, "scale": 10}},
}


def create_job(client: httpx.Client, grader: dict[str, Any] | None = None, **hp: Any) -> dict[str, Any]:
    f = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    body = job_body(TINY_ID, f.json()["id"], **hp)
    if grader is not None:
        body["method"]["reinforcement"]["grader"] = grader
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def js_fmt(v: float | None, digits: int = 3) -> str:
    """The dashboard's number format (util.js fmt), to compare what it shows with what the API returned."""
    if v is None:
        return "–"
    if float(v).is_integer():
        return str(int(v))
    if abs(v) < 1e-3 or abs(v) >= 1e5:
        mant, exp = f"{v:.2e}".split("e")
        return f"{mant}e{int(exp):+d}"
    return f"{v:.{digits}f}"


def points(page: Page, chart: str) -> int:
    return int(page.get_attribute(f'[data-testid="chart-{chart}"]', "data-points") or -1)


@pytest.fixture(scope="module")
def first_job(client: httpx.Client) -> dict[str, Any]:
    # entropy_min far above any entropy: the health monitor's "Entropy collapse" warning fires at step 1
    return create_job(
        client,
        TWO_GRADERS,
        max_steps=STEPS,
        checkpoint_interval=4,
        sample_log_count=8,
        health={"entropy_min": 100.0},
    )


def test_login_refuses_a_wrong_key_then_signs_in(
    page: Page, stack: Stack, api_key: str, artifacts: Path, page_errors: list[str]
) -> None:
    page.goto(stack.url + "/")
    login = page.get_by_test_id("login")
    login.wait_for()
    page.fill('input[name="api_key"]', "sk-not-a-key")
    page.click('button[type="submit"]')
    page.get_by_text("That API key was not accepted.").wait_for()
    page.screenshot(path=str(artifacts / "01-login-refused.png"))
    page.fill('input[name="api_key"]', api_key)
    page.click('button[type="submit"]')
    page.get_by_role("heading", name="Fine-tuning jobs").wait_for()
    assert not page_errors


def test_job_created_through_the_api_is_listed(
    page: Page, first_job: dict[str, Any], artifacts: Path, page_errors: list[str]
) -> None:
    row = page.locator(f'tr[data-job-id="{first_job["id"]}"]')
    row.wait_for()  # the list refreshes itself: the job was created after the page loaded
    assert row.get_by_test_id("status").inner_text() == "queued"
    assert f"0/{STEPS}" in row.inner_text()
    page.screenshot(path=str(artifacts / "02-jobs-list.png"))
    row.get_by_role("link", name=first_job["id"]).click()
    page.get_by_test_id("job-page").wait_for()
    assert page.get_attribute('[data-testid="job-page"]', "data-job-id") == first_job["id"]
    assert not page_errors


def test_reward_curve_gains_points_as_steps_land(
    page: Page, stack: Stack, client: httpx.Client, first_job: dict[str, Any], artifacts: Path, page_errors: list[str]
) -> None:
    assert points(page, "reward") == 0
    stack.start_worker()  # only now can steps land: each point below came over the live event stream
    seen = [0]
    deadline = time.monotonic() + 300
    while seen[-1] < STEPS and time.monotonic() < deadline:
        n = points(page, "reward")
        if n != seen[-1]:
            seen.append(n)
        time.sleep(0.05)
    assert seen[-1] == STEPS, f"the chart showed {seen}\n{stack.logs()}"
    assert seen == sorted(seen) and len(seen) >= 4, f"points did not arrive step by step: {seen}"
    for chart in ("kl", "entropy", "length", "clip", "signal", "mismatch", "is-weight"):
        assert points(page, chart) == STEPS, chart
    drawn = page.get_attribute('[data-testid="chart-reward"]', "data-series")
    assert drawn == f"train reward={STEPS};grader has_digit={STEPS};grader short={STEPS}", drawn
    page.get_by_test_id("status").filter(has_text="succeeded").wait_for(timeout=60_000)
    page.get_by_test_id("stream-state").filter(has_text="ended").wait_for()  # its last events read
    warning = page.get_by_test_id("warnings")
    assert "Entropy collapse at step 1" in warning.inner_text()
    job = client.get(f"/v1/fine_tuning/jobs/{first_job['id']}").json()
    last = page.get_by_test_id("last-reward").inner_text()
    metrics = client.get(f"/v1/fine_tuning/jobs/{first_job['id']}/metrics", params={"limit": 100}).json()["data"]
    assert job["steps_done"] == STEPS and len(metrics) == STEPS
    assert last == js_fmt(metrics[-1]["metrics"]["scores"]["train_reward_mean"])
    # peak memory per step, titled by where it was measured; the header line says where the job trained
    assert points(page, "memory") == STEPS
    device = metrics[-1]["metrics"]["memory"]["device"]
    memory_title = page.get_attribute('[data-testid="chart-memory"]', "data-title") or ""
    assert ("GPU" in memory_title) == device.startswith("cuda") and ("RSS" in memory_title) == (device == "cpu")
    execution = page.get_by_test_id("execution").inner_text()
    assert job["execution"]["device"] == device and f"micro-batch {job['execution']['micro_batch_size']}" in execution
    assert execution.startswith("CPU" if device == "cpu" else device), execution
    page.screenshot(path=str(artifacts / "03-job-page.png"), full_page=True)
    assert not page_errors


def test_rollout_viewer_shows_groups_with_rewards_and_advantages(
    page: Page, client: httpx.Client, first_job: dict[str, Any], page_errors: list[str]
) -> None:
    rollouts = page.get_by_test_id("rollouts")
    step_input = rollouts.get_by_test_id("rollout-step")
    assert step_input.input_value() == str(STEPS)  # it follows the newest step
    rollouts.locator(f'[data-testid="rollout-group"][data-step="{STEPS}"]').first.wait_for()
    step_input.fill("2")
    # the page re-renders while the user types (a new step, the job's poll): what they typed stays. The toggle is
    # clicked from script so that the box keeps the focus (a blur would commit the value)
    toggle = rollouts.get_by_test_id("rollouts-toggle")
    toggle.evaluate("button => button.click()")
    toggle.filter(has_text="Show").wait_for()
    toggle.evaluate("button => button.click()")
    toggle.filter(has_text="Hide").wait_for()
    assert step_input.input_value() == "2"
    step_input.press("Enter")
    rollouts.locator('[data-testid="rollout-group"][data-step="2"]').first.wait_for()  # read from …/samples?step=2
    expected = client.get(f"/v1/fine_tuning/jobs/{first_job['id']}/samples", params={"step": 2}).json()["data"]
    groups = rollouts.get_by_test_id("rollout-group")
    prompts = {s["prompt"] for s in expected}
    assert groups.count() == len(prompts)
    text = rollouts.inner_text()
    for s in expected:
        assert s["prompt"] in text
        assert js_fmt(s["advantage"]) in text
    header = groups.first.locator("thead").inner_text()
    assert "has_digit" in header and "short" in header  # a column per grader
    rows = groups.first.locator("tbody tr")
    rewards = [float(r.locator("td").nth(1).inner_text()) for r in rows.all()]
    assert rewards == sorted(rewards, reverse=True)  # best completion first
    rollouts.get_by_title("previous step").click()
    rollouts.locator('[data-testid="rollout-group"][data-step="1"]').first.wait_for()
    rollouts.get_by_test_id("rollouts-latest").click()
    rollouts.locator(f'[data-testid="rollout-group"][data-step="{STEPS}"]').first.wait_for()
    assert not page_errors


def test_checkpoint_download_gives_the_adapter(
    page: Page, first_job: dict[str, Any], tmp_path: Path, page_errors: list[str]
) -> None:
    table = page.get_by_test_id("checkpoints")
    table.get_by_text(str(STEPS), exact=True).wait_for()
    with page.expect_download() as info:
        table.get_by_test_id("download").first.click()  # the newest: step 12, from a presigned S3 URL
    path = tmp_path / "adapter.tar"
    info.value.save_as(path)
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert not page_errors


def test_the_usage_page_shows_what_the_job_used(
    page: Page, client: httpx.Client, first_job: dict[str, Any], artifacts: Path, page_errors: list[str]
) -> None:
    used = client.get("/v1/usage", params={"job_id": first_job["id"]}).json()["totals"]
    assert used["steps"] == STEPS and used["trained_tokens"] > 0 and used["device_seconds"] > 0
    page.get_by_role("link", name="Usage").click()
    page.get_by_test_id("usage-table").wait_for()
    page.get_by_test_id("usage-by").select_option("job")
    row = page.locator(f'tr[data-bucket="{first_job["id"]}"]')
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[2:4] == [str(STEPS), str(used["sampled_tokens"])], cells  # steps, sampled tokens
    assert cells[4] == str(used["trained_tokens"]), cells
    if used["device_seconds"] < 120:  # a short job's device time, in seconds
        # The page rounds half up, as JavaScript's Math.round does: metered device time has fractions of a second.
        assert cells[1] == f"{math.floor(used['device_seconds'] + 0.5)} s", cells
    assert "Device time by device: " in page.get_by_test_id("usage-devices").inner_text()
    page.screenshot(path=str(artifacts / "11-usage.png"), full_page=True)
    row.get_by_role("link", name=first_job["id"]).click()  # the job's page says the same
    page.get_by_test_id("job-page").wait_for()
    assert page.get_by_test_id("device-time").inner_text() == cells[1]
    assert not page_errors


def test_pause_resume_and_cancel_from_the_job_page(
    page: Page, stack: Stack, client: httpx.Client, artifacts: Path, page_errors: list[str]
) -> None:
    job = create_job(client, SLOW_GRADER, max_steps=400)  # ~1 s a step: it cannot end before the clicks
    page.goto(f"{stack.url}/#/jobs/{job['id']}")
    status = page.get_by_test_id("status")
    status.filter(has_text="running").wait_for(timeout=60_000)
    page.get_by_test_id("pause").click()
    status.filter(has_text="paused").wait_for(timeout=60_000)
    assert wait_status(client, job["id"], {"paused"}, 5, stack)["status"] == "paused"
    page.get_by_test_id("resume").click()
    status.filter(has_text="running").wait_for(timeout=60_000)
    cancel = page.get_by_test_id("cancel")
    cancel.click()
    assert cancel.inner_text() == "Really cancel?"  # one click alone cancels nothing
    assert client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["status"] == "running"
    cancel.click()
    status.filter(has_text="cancelled").wait_for(timeout=60_000)
    assert wait_status(client, job["id"], {"cancelled"}, 5, stack)["steps_done"] < 400
    page.screenshot(path=str(artifacts / "04-cancelled.png"), full_page=True)
    assert not page_errors


def test_create_job_with_the_form(
    page: Page, stack: Stack, client: httpx.Client, tmp_path: Path, artifacts: Path, page_errors: list[str]
) -> None:
    data = tmp_path / "sums.jsonl"
    data.write_bytes(jsonl(ARITH_ROWS))
    before = client.get("/v1/fine_tuning/jobs", params={"limit": 100}).json()["data"]
    page.goto(f"{stack.url}/#/new")
    form = page.get_by_test_id("create-job")
    form.locator('select[name="model"] option', has_text=TINY_ID).wait_for(state="attached")
    form.locator('input[name="training_file"]').set_input_files(str(data))
    form.locator('select[name="grader_type"]').select_option("python")
    form.get_by_role("button", name="Check grader").click()
    form.get_by_test_id("grader-check").filter(has_text="The grader is valid.").wait_for()
    form.locator('select[name="recipe"]').select_option("dr_grpo")
    form.locator('input[name="group_size"]').fill("1")  # below the minimum of 2
    form.get_by_test_id("submit-job").click()
    err = form.get_by_test_id("error")
    err.wait_for()
    assert "group_size" in err.inner_text()
    page.screenshot(path=str(artifacts / "05-form-error.png"), full_page=True)
    form.locator('input[name="group_size"]').fill("4")
    form.locator('input[name="batch_size"]').fill("2")
    form.locator('input[name="max_steps"]').fill("2")
    form.locator('input[name="max_completion_tokens"]').fill("6")
    form.locator('input[name="suffix"]').fill("from-the-form")
    form.locator('input[name="max_cost"]').fill("5")
    form.get_by_test_id("estimate-job").click()  # what it will cost, before it is created
    estimate = form.get_by_test_id("estimate")
    estimate.wait_for()
    assert "device-hours" in estimate.inner_text() and "2 steps × 2 prompts × 4 samples" in estimate.inner_text()
    assert client.get("/v1/fine_tuning/jobs", params={"limit": 100}).json()["data"] == before  # nothing created
    form.get_by_test_id("submit-job").click()
    page.get_by_test_id("job-page").wait_for()
    job_id = page.get_attribute('[data-testid="job-page"]', "data-job-id")
    job = client.get(f"/v1/fine_tuning/jobs/{job_id}").json()
    hp = job["hyperparameters"]
    assert (job["suffix"], job["model"]) == ("from-the-form", TINY_ID)
    assert (hp["recipe"], hp["group_size"], hp["batch_size"], hp["max_steps"]) == ("dr_grpo", 4, 2, 2)
    assert job["budget"] == {"max_cost": 5.0, "max_device_hours": None}
    grader = job["method"]["reinforcement"]["grader"]
    assert grader["type"] == "python" and grader["source"].startswith("def grade(sample, item):")
    files = client.get("/v1/files", params={"limit": 100}).json()["data"]
    assert [f["filename"] for f in files].count("sums.jsonl") == 1  # the rejected first submit left no copy
    page.get_by_test_id("budget").filter(has_text="5 device-h").wait_for()  # unpriced: the budget in device-hours
    page.get_by_test_id("status").filter(has_text="succeeded").wait_for(timeout=120_000)
    assert not page_errors


def test_the_readiness_report_shows_its_verdict_histogram_and_findings(
    page: Page, stack: Stack, client: httpx.Client, artifacts: Path, page_errors: list[str]
) -> None:
    if stack.worker is None:
        stack.start_worker()
    even_answer = {
        "type": "python",
        "name": "even_answer",
        "source": "def grade(sample, item):\n    return 1.0 if int(item['answer']) % 2 == 0 else 0.0\n",
    }
    f = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    body = job_body(TINY_ID, f.json()["id"], preflight={"prompts": 16, "samples": 4})
    body["method"]["reinforcement"]["grader"] = even_answer
    job = client.post("/v1/fine_tuning/jobs/preflight", json=body).json()
    assert wait_status(client, job["id"], {"succeeded", "failed"}, 120, stack)["status"] == "succeeded"
    page.goto(f"{stack.url}/#/jobs/{job['id']}")
    page.get_by_test_id("readiness-verdict").filter(has_text="not ready").wait_for(timeout=30_000)
    even = sum(int(r["answer"]) % 2 == 0 for r in ARITH_ROWS)  # all 16 rows probed: 8 even answers
    bars = page.get_by_test_id("readiness-histogram").locator(".n").all_inner_texts()
    assert bars == [str(16 - even), "0", "0", "0", str(even)]
    assert "0% of prompts give GRPO a learning signal" in page.get_by_test_id("readiness").inner_text()
    page.screenshot(path=str(artifacts / "08-readiness.png"), full_page=True)
    assert not page_errors


# The environment answers every turn that lacks the answer with a retry request (the tiny model's tokenizer knows
# digits, letters and a few signs, so the environment's text stays within them).
RETRY_ENVIRONMENT = {
    "source": (
        "def respond(messages, item):\n"
        "    if item['answer'] in messages[-1]['content']:\n"
        "        return None\n"
        "    return {'role': 'user', 'content': 'No. Again: ' + item['prompt']}\n"
    ),
    "max_turns": 3,
    "max_total_tokens": 40,
}


def test_the_rollout_viewer_shows_a_multi_turn_episode_turn_by_turn(
    page: Page, stack: Stack, client: httpx.Client, artifacts: Path, page_errors: list[str]
) -> None:
    if stack.worker is None:
        stack.start_worker()
    f = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    body = job_body(TINY_ID, f.json()["id"], max_steps=2, sample_log_count=4)
    body["method"]["reinforcement"]["environment"] = RETRY_ENVIRONMENT
    job = client.post("/v1/fine_tuning/jobs", json=body).json()
    assert wait_status(client, job["id"], {"succeeded", "failed"}, 120, stack)["status"] == "succeeded"
    samples = client.get(f"/v1/fine_tuning/jobs/{job['id']}/samples", params={"step": 2}).json()["data"]
    multi = [s for s in samples if len(s["trajectory"]) > 1]
    assert multi, samples  # the tiny model rarely says the answer: most episodes take a retry
    page.goto(f"{stack.url}/#/jobs/{job['id']}")
    rollouts = page.get_by_test_id("rollouts")
    rollouts.locator('[data-testid="rollout-group"][data-step="2"]').first.wait_for()
    spans = rollouts.get_by_test_id("trajectory-span")
    kinds = [(s.get_attribute("data-kind"), s.get_attribute("data-trained")) for s in spans.all()]
    assert ("model", "true") in kinds and ("user", "false") in kinds and ("user", "true") not in kinds
    assert len(kinds) == sum(len(s["trajectory"]) for s in samples)
    text = rollouts.inner_text()
    assert "environment · masked" in text and "model · trained" in text
    assert "No. Again: " in multi[0]["trajectory"][1]["text"] and "No. Again: " in text  # the environment's turn
    page.screenshot(path=str(artifacts / "09-multi-turn-rollout.png"), full_page=True)
    assert not page_errors
