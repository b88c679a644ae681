"""OpenAI-shaped evals, the part that runs: each item of a file rendered into chat messages from the run's
template, sampled ``n`` times, and scored by every testing criterion (the graders jobs use, each with a
``pass_threshold``). The worker (worker.evals) loads the model and reports; the API (api.services.evals) counts.

An item passes when every sample passes every criterion; it is ``errored`` when a criterion could not score a
sample (the grader raised, or returned no number), which OpenAI counts apart from failures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from grpo_core.rewards.base import Grader

_VAR = re.compile(r"\{\{\s*item\.([A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)\s*\}\}")


class TemplateError(ValueError):
    """An item lacks a field the template names (shown on the output item, the run goes on)."""


def item_of(row: dict[str, Any]) -> dict[str, Any]:
    """A file line's item: OpenAI's ``{"item": {...}}`` lines, or the line itself (a training file works too)."""
    item = row.get("item")
    return item if isinstance(item, dict) else row


def _lookup(item: dict[str, Any], path: str) -> Any:
    value: Any = item
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise TemplateError(f"the item has no field item.{path}")
        value = value[part]
    return value


def render(template: Sequence[dict[str, str]], item: dict[str, Any]) -> list[dict[str, str]]:
    """The template's messages with every ``{{item.x}}`` (``x.y`` nests) replaced by the item's value."""

    def sub(m: re.Match[str]) -> str:
        value = _lookup(item, m.group(1))
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return [{"role": msg["role"], "content": _VAR.sub(sub, msg["content"])} for msg in template]


@dataclass(frozen=True)
class Criterion:
    name: str
    grader: Grader
    pass_threshold: float


class CriterionResult(BaseModel):
    name: str
    sample: int = Field(description="Which of the item's n samples (0-based).")
    score: float | None
    passed: bool
    error: str | None = None


class SampleOut(BaseModel):
    """One completion as OpenAI's output item shows it."""

    output: list[dict[str, str]]
    finish_reason: str
    usage: dict[str, int]


class ItemResult(BaseModel):
    """One item of a run: its samples and each criterion's verdict on each."""

    datasource_item_id: int = Field(description="The item's 0-based line in the file.")
    datasource_item: dict[str, Any]
    status: str = Field(description="pass, fail or error (an item whose template or grader failed).")
    input: list[dict[str, str]]
    samples: list[SampleOut]
    results: list[CriterionResult]
    error: str | None = None


# (messages of each item) -> per item, its n samples as (text, finish reason, prompt tokens, completion tokens)
Generate = Callable[[list[list[dict[str, str]]]], list[list[tuple[str, str, int, int]]]]


def run_items(
    rows: list[tuple[int, dict[str, Any]]],
    template: Sequence[dict[str, str]],
    generate: Generate,
    criteria: Sequence[Criterion],
) -> list[ItemResult]:
    """Render, sample and score ``rows`` ((line number, file line) pairs); one result per row, in order."""
    out: list[ItemResult | None] = [None] * len(rows)
    pending: list[tuple[int, int, dict[str, Any], list[dict[str, str]]]] = []
    for pos, (line, row) in enumerate(rows):
        item = item_of(row)
        try:
            pending.append((pos, line, item, render(template, item)))
        except TemplateError as exc:
            out[pos] = ItemResult(
                datasource_item_id=line,
                datasource_item=item,
                status="error",
                input=[],
                samples=[],
                results=[],
                error=str(exc),
            )
    samples = generate([p[3] for p in pending]) if pending else []
    for (pos, line, item, messages), outs in zip(pending, samples, strict=True):
        texts = [o[0] for o in outs]
        results: list[CriterionResult] = []
        for c in criteria:
            scored = c.grader.score(texts, [item] * len(texts))
            errors = scored.errors or [None] * len(texts)
            for j, (score, err) in enumerate(zip(scored.scores, errors, strict=True)):
                ok = score is not None and err is None and score >= c.pass_threshold
                results.append(
                    CriterionResult(
                        name=c.name, sample=j, score=score, passed=ok, error=None if err is None else str(err)
                    )
                )
        errored = any(r.score is None or r.error for r in results)
        out[pos] = ItemResult(
            datasource_item_id=line,
            datasource_item=item,
            status="error" if errored else ("pass" if all(r.passed for r in results) else "fail"),
            input=messages,
            samples=[
                SampleOut(
                    output=[{"role": "assistant", "content": text}],
                    finish_reason=reason,
                    usage={
                        "prompt_tokens": pt,
                        "completion_tokens": ct,
                        "total_tokens": pt + ct,
                        "cached_tokens": 0,
                    },
                )
                for text, reason, pt, ct in outs
            ],
            results=results,
        )
    return [o for o in out if o is not None]
