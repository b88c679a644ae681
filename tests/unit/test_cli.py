"""The ``rft`` CLI in-process: typer's CliRunner, the generated client, and the real app (SQLite via Alembic).

The generated client's httpx client is the app's TestClient, so every command goes through the same request
and response code as against a server; a worker is played through the internal API (claim, metrics events with
rollouts, a checkpoint tar in the object store, finish) to exercise follow, samples and adapters download.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rft_client import Client
from typer.testing import CliRunner, Result

from api.core.settings import ApiSettings
from rft_cli import api as cli_api
from rft_cli.main import app
from runtime.storage import make_store
from tests.helpers import ARITH_ROWS, PY_GRADER, jsonl, metrics_event
from tests.tiny_model import TINY_ID

AUTH = {"Authorization": "Bearer t0k"}
TINY_HP = ["group_size=4", "batch_size=2", "max_steps=3", "max_completion_tokens=6"]

Rft = Callable[..., Result]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False}


@pytest.fixture
def rft(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> Rft:
    """Run ``rft ARGS`` against the in-process app; returns typer's Result (stdout and stderr apart)."""
    monkeypatch.setattr(
        cli_api, "make_client", lambda config: Client(base_url=str(client.base_url)).set_httpx_client(client)
    )
    monkeypatch.setattr(cli_api.Config, "close", lambda self: None)  # the TestClient outlives one invocation
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(app, list(args), env={"RFT_BASE_URL": "http://testserver", "RFT_API_KEY": ""})

    return run


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def failed(result: Result, *needles: str) -> str:
    """A clean failure: exit 1, the API's words on stderr, no traceback anywhere."""
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
    return result.stderr


@pytest.fixture
def data(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "train.jsonl").write_bytes(jsonl(ARITH_ROWS))
    (tmp_path / "has_digit.py").write_text(PY_GRADER["source"])
    (tmp_path / "check.json").write_text(
        json.dumps(
            {
                "type": "string_check",
                "input": "{{sample.output_text}}",
                "reference": "{{item.answer}}",
                "operation": "eq",
                "name": "exact",
            }
        )
    )
    return {"train": tmp_path / "train.jsonl", "grader": tmp_path / "has_digit.py", "check": tmp_path / "check.json"}


def create_job_result(rft: Rft, data: dict[str, Path], *extra: str) -> Any:
    fid = json.loads(ok(rft("files", "upload", str(data["train"]), "--json")).stdout)["id"]
    args = ["jobs", "create", "--model", TINY_ID, "--training-file", fid, "--grader", str(data["grader"])]
    args += [a for hp in TINY_HP for a in ("--hp", hp)]
    return rft(*args, *extra, "--json")


def create_job(rft: Rft, data: dict[str, Path], *extra: str) -> dict[str, Any]:
    return json.loads(ok(create_job_result(rft, data, *extra)).stdout)


def test_upload_create_and_control_a_job(rft: Rft, data: dict[str, Path]) -> None:
    out = ok(rft("files", "upload", str(data["train"]))).stdout
    assert out.startswith("file-") and f"{len(ARITH_ROWS)} rows" in out
    job = create_job(rft, data, "--recipe", "dapo", "--hp", "lora.rank=4", "--seed", "7", "--metadata", "run=cli")
    hp = job["hyperparameters"]
    assert (hp["recipe"], hp["group_size"], hp["epsilon_high"], hp["lora"]["rank"]) == ("dapo", 4, 0.28, 4)
    grader = job["method"]["reinforcement"]["grader"]
    assert (grader["type"], grader["name"], grader["source"]) == ("python", "has_digit", PY_GRADER["source"])
    assert (job["seed"], job["metadata"], job["status"]) == (7, {"run": "cli"}, "queued")

    assert job["id"] in ok(rft("jobs", "list")).stdout
    shown = ok(rft("jobs", "get", job["id"])).stdout
    assert "queued" in shown and "waiting: next to start when a worker is free" in shown
    low = create_job(rft, data, "--priority", "-3", "--not-preemptible")
    assert (low["priority"], low["preemptible"]) == (-3, False)
    failed(create_job_result(rft, data, "--priority", "3"), "422", "allowance of 0", "[param: priority]")
    ok(rft("jobs", "cancel", low["id"]))
    assert ok(rft("jobs", "pause", job["id"])).stdout.strip() == f"{job['id']}: paused"
    assert ok(rft("jobs", "resume", job["id"])).stdout.strip() == f"{job['id']}: queued"
    assert ok(rft("jobs", "cancel", job["id"])).stdout.strip() == f"{job['id']}: cancelled"
    failed(rft("jobs", "pause", job["id"]), "409")
    failed(rft("jobs", "get", "ftjob-nope"), "404", "not_found_error", "[param: fine_tuning_job_id]")


def test_a_job_file_with_flags_on_top(rft: Rft, data: dict[str, Path], tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(
        f"model: {TINY_ID}\n"
        f"training_file: {data['train']}\n"  # a local path: uploaded first
        "grader: {type: string_check, input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: eq}\n"
        "hyperparameters: {group_size: 4, batch_size: 2, max_steps: 5, lora: {rank: 4, alpha: 8}}\n"
    )
    result = ok(rft("jobs", "create", "--file", str(spec), "--hp", "max_steps=2", "--hp", "lora.rank=2", "--json"))
    assert "uploaded" in result.stderr
    job = json.loads(result.stdout)
    assert job["training_file"].startswith("file-") and job["total_steps"] == 2
    assert job["hyperparameters"]["lora"]["rank"] == 2 and job["hyperparameters"]["lora"]["alpha"] == 8
    assert job["method"]["reinforcement"]["grader"]["type"] == "string_check"


def test_mistakes_are_one_clean_line(rft: Rft, data: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\nnot json\n')
    failed(rft("files", "upload", str(bad)), "400", "line 2", "[param: file]")
    fid = json.loads(ok(rft("files", "upload", str(data["train"]), "--json")).stdout)["id"]
    base = ["jobs", "create", "--model", TINY_ID, "--training-file", fid, "--grader", str(data["grader"])]
    # a typo would be dropped by the generated model: refused before any request
    failed(rft(*base, "--hp", "grop_size=4"), "unknown field(s)", "method.reinforcement.hyperparameters.grop_size")
    failed(rft(*base, "--hp", "group_size=1"), "422", "method.reinforcement.hyperparameters.group_size")
    failed(rft(*base[:-2]), "missing --grader")
    failed(rft(*base[:3], "no-such-model", *base[4:]), "400", "[param: model]")


def test_base_url_and_api_key_from_env_or_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[cli_api.Config] = []

    def fake(config: cli_api.Config) -> Client:
        seen.append(config)
        raise cli_api.CliError("stop here")

    env = {"RFT_BASE_URL": "http://env:1", "RFT_API_KEY": "env-key"}
    monkeypatch.setattr(cli_api, "make_client", fake)
    CliRunner().invoke(app, ["jobs", "list"], env=env)
    CliRunner().invoke(app, ["--base-url", "http://flag:2", "--api-key", "flag-key", "jobs", "list"], env=env)
    assert [(c.base_url, c.api_key) for c in seen] == [("http://env:1", "env-key"), ("http://flag:2", "flag-key")]
    monkeypatch.undo()
    keyed = cli_api.make_client(cli_api.Config(api_key="k")).get_httpx_client()
    assert keyed.headers["Authorization"] == "Bearer k" and keyed.follow_redirects
    assert "Authorization" not in cli_api.make_client(cli_api.Config()).get_httpx_client().headers


def test_unreachable_api_is_a_clean_error() -> None:
    result = CliRunner().invoke(app, ["--base-url", "http://127.0.0.1:1", "jobs", "list"])
    assert result.exit_code == 1 and "cannot reach the RFT API at http://127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def adapter_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, payload in (("adapter_config.json", b'{"r": 4}'), ("adapter_model.safetensors", b"\0" * 16)):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def play_worker(client: TestClient, settings: ApiSettings, job_id: str, outcome: str, tmp_path: Path) -> None:
    """What a worker would post: 3 metrics events with rollouts, a checkpoint, then ``outcome``."""
    url = f"/internal/jobs/{job_id}"
    claim = client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=AUTH).json()
    epoch = claim["epoch"]
    events = [
        metrics_event(
            step,
            reward=step / 4,
            samples=[{"prompt": "1+1=", "completion": f"answer {step}", "reward": step / 4, "advantage": 0.5}],
        )
        for step in (1, 2, 3)
    ]
    assert client.post(f"{url}/events", json={"epoch": epoch, "events": events}, headers=AUTH).status_code == 200
    key = f"{claim['object_prefix']}checkpoints/step-000003-e{epoch}/adapter.tar"
    (tmp_path / "a.tar").write_bytes(adapter_tar())
    make_store(settings).put_file(key, tmp_path / "a.tar")
    ckpt = {"epoch": epoch, "step_number": 3, "object_key": key, "metrics": {}}
    assert client.post(f"{url}/checkpoints", json=ckpt, headers=AUTH).status_code == 200
    finish: dict[str, Any] = {"epoch": epoch, "status": outcome}
    if outcome == "failed":
        finish |= {"error_code": "grader_error", "error_message": "grader 'x' failed: ZeroDivisionError"}
    assert client.post(f"{url}/finish", json=finish, headers=AUTH).status_code == 200


def test_follow_samples_and_adapter_download(
    rft: Rft, client: TestClient, settings: ApiSettings, data: dict[str, Path], tmp_path: Path
) -> None:
    job = create_job(rft, data)
    play_worker(client, settings, job["id"], "succeeded", tmp_path)

    out = ok(rft("jobs", "follow", job["id"], "--interval", "0.1")).stdout  # not a TTY: one line per step
    assert "step 3/3  train reward 0.750" in out and f"job {job['id']} succeeded" in out
    assert "[info] Checkpoint saved at step 3/3" in out

    assert "answer 3" in ok(rft("jobs", "samples", job["id"])).stdout  # the latest step
    step1 = json.loads(ok(rft("jobs", "samples", job["id"], "--step", "1", "--json")).stdout)
    assert step1["step"] == 1 and step1["samples"][0]["completion"] == "answer 1"
    failed(rft("jobs", "samples", job["id"], "--step", "9"), "no metrics for step 9")

    out_dir = tmp_path / "adapter"
    ok(rft("adapters", "download", job["id"], "-o", str(out_dir)))
    assert sorted(p.name for p in out_dir.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    failed(rft("adapters", "download", job["id"], "--checkpoint", "ftckpt-nope"), "no checkpoint ftckpt-nope")


def test_follow_draws_a_live_bar_on_a_terminal(
    rft: Rft, client: TestClient, settings: ApiSettings, data: dict[str, Path], tmp_path: Path
) -> None:
    from rich.console import Console

    from rft_cli.follow import follow_job

    job = create_job(rft, data)
    play_worker(client, settings, job["id"], "succeeded", tmp_path)
    out, err = io.StringIO(), io.StringIO()
    term = Console(file=out, force_terminal=True, width=160, color_system=None)
    assert follow_job(cli_api.Config(), job["id"], term, Console(file=err), interval=0.1) == 0
    text = out.getvalue()
    assert f"{job['id']} succeeded" in text and "3/3" in text and "reward 0.750 ▃▅▇" in text and "ETA 0:00" in text
    assert "train reward 0.750  " not in text  # the per-step log lines are for logs, not terminals


def test_follow_exits_nonzero_with_the_error_of_a_failed_job(
    rft: Rft, client: TestClient, settings: ApiSettings, data: dict[str, Path], tmp_path: Path
) -> None:
    job = create_job(rft, data)
    play_worker(client, settings, job["id"], "failed", tmp_path)
    result = rft("jobs", "follow", job["id"], "--interval", "0.1")
    assert result.exit_code == 1
    assert f"job {job['id']} failed: grader_error: grader 'x' failed: ZeroDivisionError" in result.stderr


def test_graders_run_and_validate(rft: Rft, data: dict[str, Path]) -> None:
    run = ["graders", "run", "--grader", str(data["check"]), "--item", '{"answer": "12"}']
    assert json.loads(ok(rft(*run, "--sample", "12", "--json")).stdout)["reward"] == 1.0
    assert ok(rft(*run, "--sample", "13")).stdout.startswith("reward 0.0")
    assert ok(rft("graders", "validate", "--grader", str(data["grader"]))).stdout.strip() == "grader is valid"
    failed(rft(*run[:4], "--sample", "1", "--item", "[1]"), "--item must be a JSON object")


def test_usage_by_day_and_by_job(
    rft: Rft, client: TestClient, settings: ApiSettings, data: dict[str, Path], tmp_path: Path
) -> None:
    job = create_job(rft, data)
    play_worker(client, settings, job["id"], "succeeded", tmp_path)
    by_job = json.loads(ok(rft("usage", "--by", "job", "--since", "1d", "--json")).stdout)
    assert [(b["job_id"], b["steps"], b["trained_tokens"]) for b in by_job["data"]] == [(job["id"], 3, 240)]
    table = ok(rft("usage", "--job", job["id"])).stdout
    header = table.splitlines()[0].split()
    assert header == ["day", "device-h", "steps", "sampled", "trained", "grader-s"] and " 240 " in table
    assert "(evals, sessions, inference)" not in ok(rft("usage", "--by", "job", "--kind", "job")).stdout
    failed(rft("usage", "--since", "last week"), "--since 'last week'")
    failed(rft("usage", "--by", "week"), "--by 'week'")
    failed(rft("usage", "--job", "ftjob-nope"), "404", "[param: job_id]")


def test_an_estimate_a_budget_and_the_projects_billing(rft: Rft, data: dict[str, Path]) -> None:
    fid = json.loads(ok(rft("files", "upload", str(data["train"]), "--json")).stdout)["id"]
    args = ["jobs", "create", "--model", TINY_ID, "--training-file", fid, "--grader", str(data["grader"])]
    args += [a for hp in TINY_HP for a in ("--hp", hp)]
    shown = ok(rft(*args, "--estimate")).stdout
    assert f"estimate for {TINY_ID} on unknown (low confidence)" in shown and "device-hours" in shown
    assert "cost " not in shown  # unpriced: the cost is the device time
    assert json.loads(ok(rft(*args, "--estimate", "--json")).stdout)["object"] == "fine_tuning.job.estimate"
    assert json.loads(ok(rft("jobs", "list", "--json")).stdout)["data"] == []  # an estimate creates nothing
    job = json.loads(ok(rft(*args, "--max-device-hours", "2", "--json")).stdout)
    assert job["budget"] == {"max_cost": None, "max_device_hours": 2.0}
    out = ok(rft("jobs", "budget", job["id"], "--max-cost", "0.5")).stdout
    assert out.startswith(f"{job['id']}: budget ") and "0.5" in out
    assert "max_cost 0.5" in ok(rft("jobs", "get", job["id"])).stdout
    billing = ok(rft("billing")).stdout
    assert "none set (costs in device-hours)" in billing and "monthly budget of none" in billing
