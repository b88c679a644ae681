"""Grader pre-flight: validate a grader, score one sample with it, dry-run it on training rows.

The same code runs inside jobs (grpo_core.rewards), so what passes here is what the worker will run. Python
graders run in the sandbox here too: the API host needs the sandbox (or python graders are refused, fail-closed).
"""

from __future__ import annotations

import time
from typing import Any

from api.core.errors import InvalidRequest, Unprocessable
from api.graders.schemas import RunResponse
from grpo_core.rewards.base import (
    FormulaFailed,
    Grader,
    GraderEnv,
    InvalidVariable,
    JudgeReplyError,
    SampleError,
    SourceLoadError,
    has_error,
)
from grpo_core.rewards.graders import build_graders
from grpo_core.rewards.judge import JudgeNotConfigured
from grpo_core.rewards.python_runner import GraderError, SandboxUnavailable
from grpo_core.schemas.graders import GraderSpec, PythonGrader, ScoreModelGrader, own_judges

_FLAGS = (
    "formula_parse_error",
    "sample_parse_error",
    "truncated_observation_error",
    "unresponsive_reward_error",
    "invalid_variable_error",
    "other_error",
    "python_grader_server_error",
    "python_grader_runtime_error",
    "model_grader_server_error",
    "model_grader_refusal_error",
    "model_grader_parse_error",
)


def _build(spec: Any, env: GraderEnv, param: str) -> list[Grader]:
    try:
        return build_graders(spec, env)
    except (SandboxUnavailable, JudgeNotConfigured) as exc:
        raise Unprocessable(
            f"this service cannot run the grader: {exc}", param=param, code="grader_unavailable"
        ) from None


def refuse_own_judges(spec: GraderSpec) -> None:
    """400 for a score_model grader with its own endpoint in ``graders/run``: only a job's worker calls a project's
    judge (with the key its claim carries), never the API."""
    judges = own_judges(spec)
    if judges:
        raise InvalidRequest(
            "graders/run does not call a score_model grader's own endpoint: the API never calls a project's judge. "
            "Validate it (graders/validate), then a small job scores with it",
            param=f"{next(iter(judges))}.endpoint",
            code="own_judge_not_run",
        )


def _error_flags(spec: Any, error: SampleError | None) -> dict[str, Any]:
    """OpenAI's ``metadata.errors`` flags for one sample's failure (all false when it scored), by its class."""
    flags: dict[str, Any] = dict.fromkeys(_FLAGS, False) | {
        "python_grader_server_error_type": None,
        "python_grader_runtime_error_details": None,
        "model_grader_server_error_details": None,
    }
    if error is None:
        return flags
    if has_error(error, InvalidVariable):
        flags["invalid_variable_error"] = True
    elif has_error(error, FormulaFailed):
        flags["formula_parse_error"] = True
    elif isinstance(spec, PythonGrader):
        flags["python_grader_runtime_error"] = True
        flags["python_grader_runtime_error_details"] = str(error)
    elif isinstance(spec, ScoreModelGrader):
        key = "model_grader_parse_error" if has_error(error, JudgeReplyError) else "model_grader_server_error"
        flags[key] = True
        flags["model_grader_server_error_details"] = str(error)
    else:
        flags["other_error"] = True
    return flags


def run_grader(spec: GraderSpec, model_sample: str, item: dict[str, Any], env: GraderEnv) -> RunResponse:
    """One sample scored, in OpenAI's ``graders/run`` response shape."""
    t = time.perf_counter()
    graders = _build(spec, env, "grader")
    try:
        results = [g.score([model_sample], [item]) for g in graders]
    except GraderError as exc:
        raise Unprocessable(f"grader failed: {exc}", param="grader", code="grader_error") from None
    finally:
        for g in graders:
            g.close()
    first_error = next((r.errors[0] for r in results if r.errors and r.errors[0]), None)
    if len(results) == 1:
        reward, sub = results[0].scores[0], {k: v[0] for k, v in results[0].sub_scores.items()}
    else:  # a multi without calculate_output: its parts are separate reward columns (summed here)
        sub = {g.name: r.scores[0] for g, r in zip(graders, results, strict=True)}
        reward = sum(v for v in sub.values() if v is not None)
    return RunResponse(
        reward=0.0 if reward is None else reward,
        sub_rewards=sub,
        model_grader_token_usage_per_model={},
        metadata={
            "name": spec.name,
            "type": spec.type,
            "execution_time": round(time.perf_counter() - t, 4),
            "scores": sub,
            "token_usage": None,
            "sampled_model_name": None,
            "errors": _error_flags(spec, first_error),
        },
    )


def dry_run(spec: GraderSpec, rows: list[dict[str, Any]], env: GraderEnv, param: str) -> None:
    """Build the grader and score an empty completion on ``rows``: catches templates naming a missing column,
    python sources that fail to import, and services that cannot run the grader — before any GPU time."""
    graders = _build(spec, env, param)
    try:
        for g in graders:
            res = g.score([""] * len(rows), rows)
            for n, err in enumerate(res.errors or []):
                if has_error(err, SourceLoadError) or has_error(err, InvalidVariable):
                    raise Unprocessable(f"grader {g.name!r} on training row {n + 1}: {err}", param=param)
    except GraderError as exc:
        raise Unprocessable(f"grader dry run failed: {exc}", param=param, code="grader_error") from None
    finally:
        for g in graders:
            g.close()


def validate(spec: GraderSpec, env: GraderEnv) -> None:
    """Build the grader (sandbox / judge availability, formula) and import python sources in the sandbox.

    The schema is already checked by pydantic. Scoring one empty sample with an empty item is how the source
    gets imported; only a load failure counts here (the empty item legitimately lacks the dataset's columns).
    """
    graders = _build(spec, env, "grader")
    try:
        for g in graders:
            for err in g.score([""], [{}]).errors or []:
                if has_error(err, SourceLoadError):
                    raise Unprocessable(f"grader {g.name!r}: {err}", param="grader.source")
    except GraderError as exc:
        raise Unprocessable(f"grader failed to start: {exc}", param="grader", code="grader_error") from None
    finally:
        for g in graders:
            g.close()
