"""The RL-readiness report: will GRPO learn anything on this task with this model, and did it? (pure, no torch)

GRPO learns only from groups whose rewards differ: a prompt the base model always fails (or always solves) at
this length gives every sample the same advantage, zero, and no gradient. Sampling the base model ``k`` times on
a sample of the training prompts before training (grpo_core.evaluation.probe) measures exactly that, plus what else
wastes a run: a grader that errors, completions cut off at ``max_completion_tokens``. ``report`` turns those
samples into figures, a verdict and remedies; ``compare`` puts the same probe after training beside it, per
prompt (which prompts flipped from fail to pass, and back).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

Verdict = Literal["ready", "weak_signal", "not_ready"]
# Thresholds of the verdict (module constants: tests/unit/test_readiness.py checks each boundary).
NO_SIGNAL_NOT_READY = 0.8  # at least this share of prompts without signal: GRPO will barely move
NO_SIGNAL_WEAK = 0.5
GRADER_ERRORS_NOT_READY = 0.1
GRADER_ERRORS_WEAK = 0.02
TRUNCATED_WEAK = 0.25
DOMINANT = 0.5  # a side (always-fail or always-pass) that holds this share of prompts gets its own remedy


class PromptProbe(BaseModel):
    """One probed prompt: its training-file row (1-based) and its ``k`` rewards (None where the grader failed)."""

    row: int
    rewards: list[float | None]
    completion_tokens: list[int]
    truncated: list[bool]


class PromptOutcome(BaseModel):
    row: int
    passed: int = Field(description="Samples whose reward is at least pass_threshold.")
    mean_reward: float | None
    signal: bool = Field(description="Whether the rewards differ within the group (a GRPO gradient).")


class ReadinessReport(BaseModel):
    """What the base model does on the task before any training, and what it means for GRPO."""

    prompts: int
    samples_per_prompt: int
    pass_threshold: float
    histogram: list[int] = Field(description="Prompts by how many of their k samples passed: index 0 … k.")
    signal_share: float = Field(description="Share of prompts whose rewards differ within the group.")
    always_fail_share: float = Field(description="Share of prompts whose every sample has the same failing reward.")
    always_pass_share: float = Field(description="Share of prompts whose every sample has the same passing reward.")
    mean_reward: float | None
    grader_error_rate: float
    grader_ms_per_sample: float
    completion_tokens_mean: float
    completion_tokens_p95: int
    max_completion_tokens: int
    truncated_share: float
    verdict: Verdict
    findings: list[str] = Field(description="What the figures mean, each with its remedy; the first sums up.")
    outcomes: list[PromptOutcome]


class ReadinessComparison(BaseModel):
    """The probe of the trained model beside the base model's, prompt by prompt (same prompts, same k)."""

    prompts: int
    mean_reward_before: float | None
    mean_reward_after: float | None
    solved_before: int = Field(description="Prompts with at least half their samples passing, before.")
    solved_after: int
    fixed: list[int] = Field(description="Rows that flipped from failing to passing (solved after, not before).")
    broken: list[int] = Field(description="Rows that flipped from passing to failing.")
    summary: str


def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def _outcome(p: PromptProbe, threshold: float) -> PromptOutcome:
    scored = [r for r in p.rewards if r is not None and not math.isnan(r)]
    return PromptOutcome(
        row=p.row,
        passed=sum(r >= threshold for r in scored),
        mean_reward=sum(scored) / len(scored) if scored else None,
        signal=len(scored) > 1 and max(scored) - min(scored) > 1e-9,
    )


def _p95(values: list[int]) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def report(
    probes: list[PromptProbe], *, max_completion_tokens: int, pass_threshold: float = 0.5, grader_seconds: float = 0.0
) -> ReadinessReport:
    """The report of ``probes`` (every prompt with the same number of samples ``k``)."""
    if not probes:
        raise ValueError("no prompts were probed")
    k = len(probes[0].rewards)
    outcomes = [_outcome(p, pass_threshold) for p in probes]
    n = len(outcomes)
    histogram = [0] * (k + 1)
    for o in outcomes:
        histogram[o.passed] += 1
    no_signal = [o for o in outcomes if not o.signal]
    always_pass = sum(1 for o in no_signal if o.mean_reward is not None and o.mean_reward >= pass_threshold) / n
    always_fail = (len(no_signal) / n) - always_pass
    rewards = [r for p in probes for r in p.rewards]
    errors = sum(1 for r in rewards if r is None or math.isnan(r))
    scored = [r for r in rewards if r is not None and not math.isnan(r)]
    lengths = [t for p in probes for t in p.completion_tokens]
    truncated = sum(t for p in probes for t in p.truncated) / max(len(lengths), 1)
    error_rate = errors / max(len(rewards), 1)
    signal = 1 - len(no_signal) / n
    verdict, findings = _verdict(
        signal, always_fail, always_pass, error_rate, truncated, max_completion_tokens, _p95(lengths)
    )
    return ReadinessReport(
        prompts=n,
        samples_per_prompt=k,
        pass_threshold=pass_threshold,
        histogram=histogram,
        signal_share=signal,
        always_fail_share=always_fail,
        always_pass_share=always_pass,
        mean_reward=sum(scored) / len(scored) if scored else None,
        grader_error_rate=error_rate,
        grader_ms_per_sample=1000 * grader_seconds / max(len(rewards), 1),
        completion_tokens_mean=sum(lengths) / max(len(lengths), 1),
        completion_tokens_p95=_p95(lengths),
        max_completion_tokens=max_completion_tokens,
        truncated_share=truncated,
        verdict=verdict,
        findings=findings,
        outcomes=outcomes,
    )


def _verdict(
    signal: float,
    always_fail: float,
    always_pass: float,
    error_rate: float,
    truncated: float,
    max_tokens: int,
    p95: int,
) -> tuple[Verdict, list[str]]:
    findings = [f"{_pct(signal)} of prompts give GRPO a learning signal (their rewards differ within the group)"]
    if always_fail >= DOMINANT:
        findings.append(
            f"{_pct(always_fail)} of prompts are always failed: the task is too hard for this model at this length; "
            "try a larger model, a longer max_completion_tokens, or a partial-credit grader"
        )
    if always_pass >= DOMINANT:
        findings.append(
            f"{_pct(always_pass)} of prompts are always solved: there is little left to learn; use harder prompts, "
            "or drop these (preflight.drop_zero_variance_prompts)"
        )
    if error_rate > GRADER_ERRORS_WEAK:
        findings.append(
            f"the grader failed on {_pct(error_rate)} of samples: those samples score nothing; fix the grader "
            "(the job's events name each failure)"
        )
    if truncated >= TRUNCATED_WEAK:
        findings.append(
            f"{_pct(truncated)} of completions were cut off at max_completion_tokens={max_tokens} (95th percentile "
            f"{p95} tokens): raise max_completion_tokens or ask for shorter answers"
        )
    no_signal = 1 - signal
    if no_signal >= NO_SIGNAL_NOT_READY or error_rate > GRADER_ERRORS_NOT_READY:
        return "not_ready", findings
    if no_signal >= NO_SIGNAL_WEAK or error_rate > GRADER_ERRORS_WEAK or truncated >= TRUNCATED_WEAK:
        return "weak_signal", findings
    return "ready", findings


def compare(before: ReadinessReport, after: ReadinessReport) -> ReadinessComparison:
    """Per prompt, before and after training (the same rows, probed the same way)."""
    half = before.samples_per_prompt / 2
    b = {o.row: o for o in before.outcomes}
    a = {o.row: o for o in after.outcomes}
    rows = [r for r in b if r in a]
    solved_b = {r for r in rows if b[r].passed >= half}
    solved_a = {r for r in rows if a[r].passed >= half}
    fixed, broken = sorted(solved_a - solved_b), sorted(solved_b - solved_a)
    mb, ma = before.mean_reward, after.mean_reward
    change = f"mean reward {mb:.3f} → {ma:.3f}; " if mb is not None and ma is not None else ""
    return ReadinessComparison(
        prompts=len(rows),
        mean_reward_before=mb,
        mean_reward_after=ma,
        solved_before=len(solved_b),
        solved_after=len(solved_a),
        fixed=fixed,
        broken=broken,
        summary=f"{change}solved {len(solved_b)} → {len(solved_a)} of {len(rows)} prompts "
        f"({len(fixed)} flipped from fail to pass, {len(broken)} from pass to fail)",
    )


def zero_variance_rows(rep: ReadinessReport) -> set[int]:
    """The probed rows without signal: what ``drop_zero_variance_prompts`` removes from the training set."""
    return {o.row for o in rep.outcomes if not o.signal}
