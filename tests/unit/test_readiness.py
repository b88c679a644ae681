"""The readiness report's figures, verdict and remedies on hand-made probes, each checked against values computed
by hand; and the before/after comparison."""

from __future__ import annotations

import pytest

from grpo_core.evaluation.readiness import PromptProbe, compare, report, zero_variance_rows


def probe(row: int, rewards: list[float | None], tokens: int = 10, truncated: int = 0) -> PromptProbe:
    k = len(rewards)
    return PromptProbe(
        row=row, rewards=rewards, completion_tokens=[tokens] * k, truncated=[i < truncated for i in range(k)]
    )


def test_a_hand_computed_report() -> None:
    # 5 prompts × 4 samples, pass = reward ≥ 0.5
    probes = [
        probe(1, [0.0, 0.0, 0.0, 0.0]),  # always fails: no signal
        probe(2, [0.0, 0.0, 0.0, 0.0]),  # always fails
        probe(3, [1.0, 0.0, 1.0, 0.0]),  # 2 of 4 pass: signal
        probe(4, [1.0, 1.0, 1.0, 1.0], tokens=32, truncated=4),  # always passes; every sample cut off
        probe(5, [0.25, 0.75, None, 0.75]),  # a grader error; 2 of 3 scored pass; signal
    ]
    rep = report(probes, max_completion_tokens=32, grader_seconds=0.4)
    assert rep.histogram == [2, 0, 2, 0, 1]  # passes per prompt: 0, 0, 2, 4, 2
    assert rep.signal_share == pytest.approx(2 / 5)
    assert rep.always_fail_share == pytest.approx(2 / 5) and rep.always_pass_share == pytest.approx(1 / 5)
    assert rep.mean_reward == pytest.approx((0 + 0 + 2 + 4 + 1.75) / 19)
    assert rep.grader_error_rate == pytest.approx(1 / 20) and rep.grader_ms_per_sample == pytest.approx(20.0)
    assert rep.completion_tokens_mean == pytest.approx((16 * 10 + 4 * 32) / 20)
    assert rep.completion_tokens_p95 == 32 and rep.truncated_share == pytest.approx(4 / 20)
    # 60% without signal (≥ 50%) and 5% grader errors (> 2%): weak signal, not "not ready" (< 80%, ≤ 10%)
    assert rep.verdict == "weak_signal"
    assert rep.findings[0].startswith("40% of prompts give GRPO a learning signal")
    assert any(f.startswith("the grader failed on 5% of samples") for f in rep.findings)
    assert not any("always failed" in f or "cut off" in f for f in rep.findings)  # 40% < 50%; 20% < 25%
    assert [o.passed for o in rep.outcomes] == [0, 0, 2, 4, 2]
    assert zero_variance_rows(rep) == {1, 2, 4}


def test_too_hard_is_not_ready_with_the_remedies() -> None:
    probes = [probe(i, [0.0] * 8, tokens=64, truncated=8) for i in range(1, 10)] + [probe(10, [0.0] * 7 + [1.0])]
    rep = report(probes, max_completion_tokens=64)
    assert rep.histogram == [9, 1, 0, 0, 0, 0, 0, 0, 0] and rep.signal_share == pytest.approx(0.1)
    assert rep.verdict == "not_ready"
    assert rep.findings[1] == (
        "90% of prompts are always failed: the task is too hard for this model at this length; try a larger "
        "model, a longer max_completion_tokens, or a partial-credit grader"
    )
    assert rep.findings[2].startswith("90% of completions were cut off at max_completion_tokens=64")


def test_too_easy_and_ready() -> None:
    easy = report([probe(i, [1.0] * 4) for i in range(1, 4)], max_completion_tokens=8)
    assert easy.verdict == "not_ready" and "always solved" in easy.findings[1]
    mixed = [probe(1, [1.0, 0.0]), probe(2, [0.0, 1.0]), probe(3, [0.0, 0.0])]
    assert report(mixed, max_completion_tokens=8).verdict == "ready"  # 33% without signal


def test_before_and_after_per_prompt() -> None:
    before = report([probe(1, [0, 0, 0, 0]), probe(2, [1, 1, 0, 0]), probe(3, [1, 1, 1, 0])], max_completion_tokens=8)
    after = report([probe(1, [1, 1, 1, 0]), probe(2, [1, 0, 0, 0]), probe(3, [1, 1, 1, 1])], max_completion_tokens=8)
    cmp = compare(before, after)
    assert (cmp.solved_before, cmp.solved_after, cmp.fixed, cmp.broken) == (2, 2, [1], [2])
    assert (
        cmp.summary
        == "mean reward 0.417 → 0.667; solved 2 → 2 of 3 prompts (1 flipped from fail to pass, 1 from pass to fail)"
    )


def test_no_probes_is_an_error() -> None:
    with pytest.raises(ValueError, match="no prompts"):
        report([], max_completion_tokens=8)
