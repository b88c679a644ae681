"""The CLI's pure pieces: job bodies from files and flags, dropped-key detection, sparkline, ETA, error text."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest
from rft_client.models import JobEvent
from rft_client.types import Response

from rft_cli.api import ApiError, CliError
from rft_cli.follow import FollowState, eta_seconds, format_duration, sparkline
from rft_cli.jobspec import build_job_body, dropped_keys, parse_assignments
from tests.helpers import step_metrics

GRADER = {"type": "python", "source": "def grade(s, i):\n    return 1.0\n"}


def test_assignments_parse_json_values_and_nest() -> None:
    got = parse_assignments(["group_size=8", "learning_rate=5e-4", "lora.rank=16", "lora.alpha=32", "recipe=dapo"])
    assert got == {"group_size": 8, "learning_rate": 5e-4, "lora": {"rank": 16, "alpha": 32}, "recipe": "dapo"}
    assert parse_assignments(["dynamic_sampling=true", "delta=null"]) == {"dynamic_sampling": True, "delta": None}
    with pytest.raises(CliError, match="key=value"):
        parse_assignments(["group_size"])


def test_short_form_file_and_flags_merge_into_the_api_body() -> None:
    spec = {"model": "m", "training_file": "file-1", "grader": GRADER, "hyperparameters": {"lora": {"rank": 8}}}
    body = build_job_body(spec, recipe="dapo", hyperparameters={"lora": {"alpha": 16}}, validation_file="file-2")
    assert body == {
        "model": "m",
        "training_file": "file-1",
        "validation_file": "file-2",
        "method": {
            "type": "reinforcement",
            "reinforcement": {
                "grader": GRADER,
                "hyperparameters": {"lora": {"rank": 8, "alpha": 16}, "recipe": "dapo"},
            },
        },
    }
    full = {
        "model": "m",
        "training_file": "f",
        "method": {"type": "reinforcement", "reinforcement": {"grader": GRADER}},
    }
    assert build_job_body(full, model="other")["model"] == "other"
    with pytest.raises(CliError, match="missing --training-file, --grader"):
        build_job_body({"model": "m"})


def test_dropped_keys_name_what_a_model_would_lose() -> None:
    sent = {"a": 1, "b": {"c": 2, "typo": 3}, "d": [1]}
    assert dropped_keys(sent, {"a": 1, "b": {"c": 2}, "d": [1]}) == ["b.typo"]
    assert dropped_keys(sent, sent) == []


def test_sparkline_scale_and_gaps() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([0.0, None, 1.0]) == "▁ █"
    assert sparkline([-2.0, 2.0]) == "▁█"  # a range beyond [0, 1] stretches the scale
    assert sparkline([0.1] * 50, width=10) == "▁" * 10
    assert sparkline([]) == ""


def test_eta_from_recent_step_durations() -> None:
    assert eta_seconds([100.0, 10.0, 10.0, 10.0, 10.0, 10.0], remaining=6) == 60.0  # warm-up step left out
    assert eta_seconds([], remaining=3) is None and eta_seconds([5.0], remaining=0) == 0.0
    assert (format_duration(59), format_duration(61), format_duration(3725), format_duration(None)) == (
        "0:59",
        "1:01",
        "1:02:05",
        "-:--",
    )
    state = FollowState()
    for step in (1, 2, 1):  # a duplicate step is ignored
        event = {"id": f"e{step}", "created_at": 100 + step, "level": "info", "message": "", "type": "metrics"}
        state.add_metrics(JobEvent.from_dict(event | {"data": step_metrics(step, 4)}))  # 1 s per step
    assert (state.step, state.durations, state.eta("running"), state.eta("paused")) == (2, [1.0, 1.0], "0:02", "paused")
    assert state.rewards == [0.5, 0.5] and state.valid_reward is None


def test_api_error_text_from_the_error_shape_and_from_anything_else() -> None:
    def resp(status: int, body: bytes) -> Response[None]:
        return Response(status_code=HTTPStatus(status), content=body, headers={}, parsed=None)

    shaped = json.dumps({"error": {"type": "invalid_request_error", "code": "x", "message": "bad", "param": "p"}})
    assert ApiError.from_response(resp(422, shaped.encode())).message == "422 invalid_request_error (x): bad [param: p]"
    assert ApiError.from_response(resp(502, b"<html>bad gateway</html>")).message == "502: <html>bad gateway</html>"


@pytest.mark.parametrize("value", ["32", "auto"])
def test_execution_settings_pass_through_the_generated_models(value: str) -> None:
    """``--hp micro_batch_size=32`` and ``=auto`` both survive the generated client (a number beside a const once
    made it refuse every number), as do the other ``auto`` settings."""
    from rft_client.models import JobCreate

    hp = parse_assignments([f"micro_batch_size={value}", "device=cuda:0", "gradient_checkpointing=true"])
    body = build_job_body({"model": "m", "training_file": "f", "grader": GRADER, "hyperparameters": hp})
    kept = JobCreate.from_dict(body).to_dict()
    assert kept["method"]["reinforcement"]["hyperparameters"] == hp and not dropped_keys(body, kept)


def test_the_readiness_report_prints_its_verdict_histogram_findings_and_comparison() -> None:
    from grpo_core.evaluation.readiness import PromptProbe, compare, report
    from rft_cli.render import readiness_lines

    def probe(row: int, rewards: list[float]) -> PromptProbe:
        return PromptProbe(row=row, rewards=rewards, completion_tokens=[5] * 2, truncated=[False] * 2)

    before = report([probe(1, [0, 0]), probe(2, [1, 0]), probe(3, [1, 1])], max_completion_tokens=8)
    after = report([probe(1, [1, 1]), probe(2, [1, 0]), probe(3, [1, 1])], max_completion_tokens=8)
    body = {
        "requested": True,
        "before": before.model_dump(mode="json"),
        "comparison": compare(before, after).model_dump(mode="json"),
        "dropped_rows": [1, 3],
    }
    lines = readiness_lines(body)
    assert lines[0] == "verdict: weak signal  (3 prompts × 2 samples of the base model, mean reward 0.500)"
    assert lines[2:5] == [f"   0/2  {'#' * 30} 1", f"   1/2  {'#' * 30} 1", f"   2/2  {'#' * 30} 1"]
    assert lines[5].startswith("- 33% of prompts give GRPO a learning signal")
    assert "2 prompts without signal left out of training" in lines
    assert lines[-1] == (
        "after training: mean reward 0.500 → 0.833; solved 2 → 3 of 3 prompts "
        "(1 flipped from fail to pass, 0 from pass to fail)"
    )
    assert readiness_lines({"requested": False})[0].startswith("this job asked for no readiness probe")
    assert readiness_lines({"requested": True, "before": None}) == ["the worker has not probed the base model yet"]
