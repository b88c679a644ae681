"""Scoring functions built from grader specs: ``score(texts, rows) -> GraderResult`` (grpo_core.rewards.base).

A failure on one sample is a typed ``SampleError`` that scores 0 (OpenAI's rule); ``None`` from a grader means
"does not apply" (TRL's rule); base's docstring has both. Graders that hold resources (the Python sandbox, a
judge's HTTP client) are released with ``close()``.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from grpo_core.rewards.base import (
    FormulaFailed,
    Grader,
    GraderCodeError,
    GraderEnv,
    GraderResult,
    InvalidVariable,
    PartErrors,
    SampleError,
    SandboxFailure,
    SourceLoadError,
)
from grpo_core.rewards.judge import Embeddings, ScoreModel
from grpo_core.rewards.similarity import similarity
from grpo_core.rewards.templates import TemplateError, make_sample, render
from grpo_core.schemas.formula import evaluate_formula, parse_formula
from grpo_core.schemas.graders import (
    GraderSpec,
    JsonSchemaGrader,
    LengthGrader,
    MathGrader,
    MultiGrader,
    PythonGrader,
    RegexGrader,
    ScoreModelGrader,
    StringCheckGrader,
    TextSimilarityGrader,
)

MAX_ABS_SCORE = 1e6  # a score outside ±1e6 is a bug in the grader, not a reward: it would swamp the batch


def _finite(value: Any) -> float:
    """A grader's value as a float, or ValueError: it must be a finite number within ±MAX_ABS_SCORE."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"returned {value!r}, not a finite number")
    if abs(value) > MAX_ABS_SCORE:
        raise ValueError(f"returned {value!r}, outside the allowed range ±{MAX_ABS_SCORE:g}")
    return float(value)


class PerSample:
    """A grader defined by ``fn(sample, item) -> float | None``; exceptions become (0.0, reason)."""

    def __init__(self, name: str, fn: Callable[[dict[str, Any], dict[str, Any]], float | None]) -> None:
        self.name = name
        self.fn = fn

    def score(
        self, texts: list[str], rows: list[dict[str, Any]], extras: list[dict[str, Any]] | None = None
    ) -> GraderResult:
        scores: list[float | None] = []
        errors: list[SampleError | None] = []
        for text, row, extra in zip(texts, rows, extras or [{}] * len(texts), strict=True):
            try:
                value = self.fn(make_sample(text, extra), row)
                scores.append(None if value is None else _finite(value))
                errors.append(None)
            except TemplateError as exc:  # the dataset row lacks what the grader's template names
                scores.append(0.0)
                errors.append(InvalidVariable(f"{type(exc).__name__}: {exc}"))
            except Exception as exc:  # the grader's own failure on this sample, reported with the score 0
                scores.append(0.0)
                errors.append(GraderCodeError(f"{type(exc).__name__}: {exc}"))
        return GraderResult(scores, errors)

    def close(self) -> None:
        pass


def _string_check(spec: StringCheckGrader) -> Callable[[dict[str, Any], dict[str, Any]], float]:
    ops = {
        "eq": lambda a, b: a == b,
        "ne": lambda a, b: a != b,
        "like": lambda a, b: b in a,
        "ilike": lambda a, b: b.lower() in a.lower(),
    }
    op: Callable[[str, str], bool] = ops[spec.operation]
    return lambda s, i: float(op(render(spec.input, s, i), render(spec.reference, s, i)))


def _text_similarity(spec: TextSimilarityGrader, env: GraderEnv) -> Callable[[dict[str, Any], dict[str, Any]], float]:
    metric: Callable[[str, str], float] = partial(similarity, spec.evaluation_metric)
    if spec.evaluation_metric == "cosine":
        metric = Embeddings(env).cosine

    def fn(s: dict[str, Any], i: dict[str, Any]) -> float:
        v = min(1.0, max(0.0, metric(render(spec.input, s, i), render(spec.reference, s, i))))
        return v if spec.pass_threshold is None else float(v >= spec.pass_threshold)

    return fn


def _regex(spec: RegexGrader) -> Callable[[dict[str, Any], dict[str, Any]], float]:
    flags = 0
    for f in spec.flags:
        flags |= getattr(re, f)
    pattern = re.compile(spec.pattern, flags)
    match = pattern.fullmatch if spec.mode == "fullmatch" else pattern.search
    return lambda s, i: float(match(render(spec.input, s, i)) is not None)


def _json_schema(spec: JsonSchemaGrader) -> Callable[[dict[str, Any], dict[str, Any]], float]:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(spec.json_schema)

    def fn(s: dict[str, Any], i: dict[str, Any]) -> float:
        try:
            value = json.loads(s["output_text"])
        except ValueError:
            return 0.0
        return float(validator.is_valid(value))

    return fn


def _length(spec: LengthGrader) -> Callable[[dict[str, Any], dict[str, Any]], float]:
    def fn(s: dict[str, Any], i: dict[str, Any]) -> float:
        over = len(s["output_text"]) - spec.target
        if spec.mode == "linear":
            return -max(0, over) / spec.scale
        return -min(1.0, max(0, over) / spec.buffer)

    return fn


_BOXED = "\\boxed{"


def extract_answer(text: str, how: str) -> str:
    """The answer part of a completion: the last ``\\boxed{…}`` (balanced braces), the last ``<answer>…</answer>``,
    or the whole text (``auto`` tries them in that order)."""
    if how in ("auto", "boxed"):
        start = text.rfind(_BOXED)
        if start >= 0:
            depth, i = 1, start + len(_BOXED)
            while i < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            if depth == 0:
                return text[start + len(_BOXED) : i - 1]
        if how == "boxed":
            return ""
    if how in ("auto", "answer_tag"):
        tags: list[str] = re.findall(r"<answer>(.*?)</answer>", text, flags=re.DOTALL)
        if tags:
            return tags[-1]
        if how == "answer_tag":
            return ""
    return text


def _latex(text: str) -> str:
    """math-verify reads LaTeX inside $…$; bare numbers and expressions are read as they are."""
    return f"${text}$" if "\\" in text and "$" not in text else text


def _math(spec: MathGrader) -> Callable[[dict[str, Any], dict[str, Any]], float]:
    from math_verify import parse, verify

    def fn(s: dict[str, Any], i: dict[str, Any]) -> float:
        answer = extract_answer(s["output_text"], spec.extract).strip()
        if not answer:
            return 0.0
        # math-verify's own timeouts use SIGALRM, which only the main thread may set.
        timeout = 5 if threading.current_thread() is threading.main_thread() else None
        gold = parse(_latex(render(spec.reference, s, i)), parsing_timeout=timeout)
        pred = parse(_latex(answer), parsing_timeout=timeout)
        return float(verify(gold, pred, timeout_seconds=timeout))

    return fn


class PythonFunction:
    """User code run in the sandbox (grpo_core.rewards.python_runner): one persistent runner per grader."""

    def __init__(self, spec: PythonGrader, env: GraderEnv) -> None:
        from grpo_core.rewards.python_runner import PythonRunner, SandboxLimits

        self.spec = spec
        self.name = spec.name
        limits = SandboxLimits(batch_timeout_seconds=spec.timeout_seconds)
        self.runner = PythonRunner(spec.source, tier=env.sandbox_tier, limits=limits)

    def score(
        self, texts: list[str], rows: list[dict[str, Any]], extras: list[dict[str, Any]] | None = None
    ) -> GraderResult:
        samples = [make_sample(t, e) for t, e in zip(texts, extras or [{}] * len(texts), strict=True)]
        batch = self.runner.score_batch(samples, rows)
        # whose failure an error is: the source's (it does not import), the sandbox's, or the code's on the item
        kind = {"load": SourceLoadError, "sandbox": SandboxFailure, None: GraderCodeError}[batch.failure]
        scores: list[float | None] = []
        errors: list[SampleError | None] = []
        for r in batch.items:
            value, err = r.get("score"), r.get("error")
            if err is None and value is not None:
                try:
                    value = _finite(value)
                except ValueError as exc:
                    err = str(exc)
            scores.append(0.0 if err is not None else value)
            errors.append(None if err is None else kind(err))
        return GraderResult(scores, errors)

    def close(self) -> None:
        self.runner.close()


class Multi:
    """Sub-graders combined by a checked formula (OpenAI's multi); sub-scores are reported per sub-grader."""

    def __init__(self, spec: MultiGrader, env: GraderEnv) -> None:
        if spec.calculate_output is None:
            raise ValueError("a multi grader without calculate_output is split into columns by build_graders")
        self.name = spec.name
        self.parts: dict[str, Grader] = {k: build_grader(g, env) for k, g in spec.graders.items()}
        self.tree = parse_formula(spec.calculate_output, set(self.parts))

    def score(
        self, texts: list[str], rows: list[dict[str, Any]], extras: list[dict[str, Any]] | None = None
    ) -> GraderResult:
        results = {k: g.score(texts, rows, extras) for k, g in self.parts.items()}
        scores: list[float | None] = []
        errors: list[SampleError | None] = []
        for n in range(len(texts)):
            parts = {k: err for k, r in results.items() if r.errors and (err := r.errors[n]) is not None}
            values = {k: r.scores[n] for k, r in results.items()}
            formula: FormulaFailed | None = None
            if any(v is None for v in values.values()):
                scores.append(None)  # a part that does not apply makes the whole not apply
            else:
                try:
                    scores.append(
                        evaluate_formula(self.tree, {k: float(v) for k, v in values.items() if v is not None})
                    )
                except ValueError as exc:
                    scores.append(0.0)
                    formula = FormulaFailed(str(exc))
            if formula is not None and not parts:
                errors.append(formula)
            else:
                errors.append(PartErrors(parts, formula) if parts else None)
        return GraderResult(scores, errors, {k: r.scores for k, r in results.items()})

    def close(self) -> None:
        for g in self.parts.values():
            g.close()


def build_grader(spec: Any, env: GraderEnv | None = None) -> Grader:
    """The scoring object for one grader spec (a ``multi`` must have a formula; see ``build_graders``)."""
    env = env or GraderEnv()
    if isinstance(spec, PythonGrader):
        return PythonFunction(spec, env)
    if isinstance(spec, MultiGrader):
        return Multi(spec, env)
    if isinstance(spec, ScoreModelGrader):
        return ScoreModel(spec, env)
    if isinstance(spec, TextSimilarityGrader):
        return PerSample(spec.name, _text_similarity(spec, env))
    makers: dict[type, Callable[[Any], Callable[[dict[str, Any], dict[str, Any]], float | None]]] = {
        StringCheckGrader: _string_check,
        RegexGrader: _regex,
        JsonSchemaGrader: _json_schema,
        LengthGrader: _length,
        MathGrader: _math,
    }
    for cls in type(spec).__mro__:
        if cls in makers:
            return PerSample(spec.name, makers[cls](spec))
    raise TypeError(f"unsupported grader {type(spec).__name__}")


def build_graders(spec: GraderSpec, env: GraderEnv | None = None) -> list[Grader]:
    """The reward columns of a job: one grader, or a formula-less multi's sub-graders (named by their keys)."""
    if isinstance(spec, MultiGrader) and spec.calculate_output is None:
        out = []
        for key, sub in spec.graders.items():
            g = build_grader(sub, env)
            g.name = key
            out.append(g)
        return out
    return [build_grader(spec, env)]
