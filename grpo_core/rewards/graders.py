"""Scoring functions built from grader specs: ``score(texts, rows) -> GraderResult``.

A score is a float, or None when the grader could not score the sample (it raised, returned a non-number, or
timed out); None becomes NaN in the advantages and the sample contributes nothing (grpo_core.advantages).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from grpo_core.rewards.python_runner import run_python_grader
from grpo_core.rewards.schemas import GraderSpec, PythonGrader, StringCheckGrader

_TEMPLATE = re.compile(r"\{\{\s*([a-zA-Z_][\w.]*)\s*\}\}")


@dataclass
class GraderResult:
    scores: list[float | None]
    errors: list[str | None] = field(default_factory=list)  # per sample, the reason a score is None


class Grader(Protocol):
    name: str

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult: ...


def render(template: str, sample: dict[str, Any], item: dict[str, Any]) -> str:
    """Fill ``{{sample.x}}`` / ``{{item.x.y}}`` from the sample and the dataset row; a missing key is an error."""

    def value(match: re.Match[str]) -> str:
        root, *path = match.group(1).split(".")
        scopes = {"sample": sample, "item": item}
        if root not in scopes:
            raise KeyError(f"unknown template root {root!r} (use sample.* or item.*)")
        cur: Any = scopes[root]
        for part in path:
            if not isinstance(cur, dict) or part not in cur:
                raise KeyError(f"{{{{{match.group(1)}}}}} is not in the {root}")
            cur = cur[part]
        return cur if isinstance(cur, str) else str(cur)

    return _TEMPLATE.sub(value, template)


class StringCheck:
    def __init__(self, spec: StringCheckGrader) -> None:
        self.spec = spec
        self.name = spec.name

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        scores: list[float | None] = []
        errors: list[str | None] = []
        for text, row in zip(texts, rows, strict=True):
            sample = {"output_text": text}
            try:
                a, b = render(self.spec.input, sample, row), render(self.spec.reference, sample, row)
            except KeyError as exc:
                scores.append(None)
                errors.append(str(exc.args[0]))
                continue
            op = self.spec.operation
            hit = {
                "eq": a == b,
                "ne": a != b,
                "like": b in a,
                "ilike": b.lower() in a.lower(),
            }[op]
            scores.append(1.0 if hit else 0.0)
            errors.append(None)
        return GraderResult(scores, errors)


class PythonFunction:
    """User ``grade(sample, item)`` run in a child process (grpo_core.rewards.python_runner)."""

    def __init__(self, spec: PythonGrader) -> None:
        self.spec = spec
        self.name = spec.name

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        samples = [{"output_text": t} for t in texts]
        raw = run_python_grader(self.spec.source, samples, rows, timeout=self.spec.timeout_seconds)
        scores: list[float | None] = []
        errors: list[str | None] = []
        for r in raw:
            value, err = r.get("score"), r.get("error")
            if err is None and (
                isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            ):
                err = f"grade() returned {value!r}, not a finite number"
            if err is not None:
                scores.append(None)
                errors.append(err)
            else:
                scores.append(float(value))
                errors.append(None)
        return GraderResult(scores, errors)


def build_grader(spec: GraderSpec) -> Grader:
    if isinstance(spec, StringCheckGrader):
        return StringCheck(spec)
    if isinstance(spec, PythonGrader):
        return PythonFunction(spec)
    raise TypeError(f"unsupported grader {type(spec).__name__}")
