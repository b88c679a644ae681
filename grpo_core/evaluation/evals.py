"""OpenAI-shaped evals, the part that runs: each item of a file rendered into chat messages from the run's
template, sampled ``n`` times, and scored by every testing criterion (the graders jobs use, each with a
``pass_threshold``), through grpo_core.policy's session (``eval_policy``) and
grpo_core.rollout.scored.sample_and_score. The worker (worker.evals) fetches the run's inputs and posts the results;
the API (api.evals.service) counts.

An item passes when every sample passes every criterion; it is ``errored`` when a criterion could not score a
sample (the grader raised, or returned no number), which OpenAI counts apart from failures.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from grpo_core.rewards.base import Grader

if TYPE_CHECKING:  # the API reads this module's schemas: the training stack is imported only where a run samples
    from grpo_core.rollout.scored import ScoredSamples

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


# (each item's chat messages, the items, the graders) -> the items' samples, ``n`` each in item order, every one
# scored by every grader: grpo_core.rollout.scored.sample_and_score on the run's policy (``eval_policy``)
SampleAndScore = Callable[[list[list[dict[str, str]]], list[dict[str, Any]], list[Grader]], "ScoredSamples"]


@dataclass(frozen=True)
class EvalSampling:
    """How a run samples (OpenAI's ``sampling_params``): ``n`` completions per item of at most
    ``max_completion_tokens`` tokens, at ``temperature`` (0: greedy) within the ``top_p`` nucleus, from ``seed``."""

    n: int
    temperature: float
    max_completion_tokens: int
    top_p: float
    seed: int


@contextlib.contextmanager
def eval_policy(model_dir: Path, adapter_dir: Path | None, sampling: EvalSampling) -> Iterator[SampleAndScore]:
    """The model under evaluation, opened for ``run_items``: ``model_dir``'s base model, with the PEFT adapter in
    ``adapter_dir`` (its own adapter_config.json) for a fine-tuned model, on this machine's device and precision
    (grpo_core.policy.open_policy, freed on exit).

    It samples with the transformers engine: ``generate`` on the policy itself, its random stream forked from
    ``seed`` for every batch of items. An eval is one pass over its items, too short to repay the merged engine's
    weight copy or a vLLM engine's start. Each item is rendered with the model's chat template, as training renders
    a ``messages`` row."""
    from grpo_core.data.rows import prompt_text
    from grpo_core.hardware.device import resolve_placement
    from grpo_core.policy import open_policy
    from grpo_core.rollout.engines.base import Sampling
    from grpo_core.rollout.scored import sample_and_score
    from grpo_core.schemas.config import GRPOConfig

    cfg = GRPOConfig(rollout_engine="transformers", gradient_checkpointing=False)
    draw = Sampling(
        sampling.n, sampling.max_completion_tokens, sampling.temperature, top_p=sampling.top_p, seed=sampling.seed
    )
    placement = resolve_placement("auto", "auto")
    with open_policy(cfg, model_dir, placement=placement, adapter_dir=adapter_dir) as session:

        def sample(
            messages: list[list[dict[str, str]]], items: list[dict[str, Any]], graders: list[Grader]
        ) -> ScoredSamples:
            prompts = [prompt_text({"messages": m}, session.tokenizer) for m in messages]
            return sample_and_score(session.engine, prompts, items, graders, draw)

        yield sample


def run_items(
    rows: list[tuple[int, dict[str, Any]]],
    template: Sequence[dict[str, str]],
    sample: SampleAndScore,
    criteria: Sequence[Criterion],
) -> list[ItemResult]:
    """Render, sample and score ``rows`` ((line number, file line) pairs); one result per row, in order. The rows'
    samples are drawn and graded in one ``sample`` call, each criterion's grader once over all of them."""
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
    if pending:
        scored = sample([p[3] for p in pending], [p[2] for p in pending], [c.grader for c in criteria])
        n = len(scored.texts) // len(pending)
        for j, (pos, line, item, messages) in enumerate(pending):
            out[pos] = _item_result(line, item, messages, scored, range(j * n, (j + 1) * n), criteria)
    return [o for o in out if o is not None]


def _item_result(
    line: int,
    item: dict[str, Any],
    messages: list[dict[str, str]],
    scored: ScoredSamples,
    samples: range,
    criteria: Sequence[Criterion],
) -> ItemResult:
    """One item's verdict from its ``samples`` (indices into ``scored``): each criterion on each sample."""
    results: list[CriterionResult] = []
    for c, graded in zip(criteria, scored.graded, strict=True):
        errors = graded.errors or [None] * len(graded.scores)
        for j, i in enumerate(samples):
            score, err = graded.scores[i], errors[i]
            ok = score is not None and err is None and score >= c.pass_threshold
            results.append(
                CriterionResult(name=c.name, sample=j, score=score, passed=ok, error=None if err is None else str(err))
            )
    errored = any(r.score is None or r.error for r in results)
    prompt_tokens, completion_tokens, truncated = scored.prompt_tokens, scored.completion_tokens, scored.truncated
    return ItemResult(
        datasource_item_id=line,
        datasource_item=item,
        status="error" if errored else ("pass" if all(r.passed for r in results) else "fail"),
        input=messages,
        samples=[
            SampleOut(
                output=[{"role": "assistant", "content": scored.texts[i]}],
                finish_reason="length" if truncated[i] else "stop",
                usage={
                    "prompt_tokens": prompt_tokens[i],
                    "completion_tokens": completion_tokens[i],
                    "total_tokens": prompt_tokens[i] + completion_tokens[i],
                    "cached_tokens": 0,
                },
            )
            for i in samples
        ],
        results=results,
    )
