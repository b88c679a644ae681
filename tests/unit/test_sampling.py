"""Sampling strategies (GFPO, dynamic sampling) and multi-grader reward combination, on hand-made inputs.

The engine here is a stand-in that returns fixed completions (a unit test of the batching logic, no model);
the real engines are exercised in test_model_math.py and tests/vllm.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from grpo_core.errors import GraderFailed, UserError
from grpo_core.rewards.advantages import STD_EPS, compute_advantages
from grpo_core.rewards.base import GraderResult
from grpo_core.rewards.combine import combined_advantages, weighted_total
from grpo_core.rollout.batch import Rollout, concat_rollouts, pack_rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.sampling import PromptCursor, collect_batch, gfpo_keep, groups_with_signal
from grpo_core.schemas.config import GRPOConfig

NAN = math.nan


def test_gfpo_keeps_the_shortest_in_row_order_ties_to_the_earlier() -> None:
    lengths = torch.tensor([5, 2, 9, 2, 7, 1, 1, 3])
    keep = gfpo_keep(torch.zeros(8), lengths, sampled=4, keep=2, metric="length")
    assert keep.tolist() == [1, 3, 5, 6]


def test_gfpo_reward_per_token_puts_unscorable_last() -> None:
    total = torch.tensor([1.0, 1.0, NAN, 0.0])  # per token: .25, .5, nan, 0
    lengths = torch.tensor([4, 2, 1, 1])
    assert gfpo_keep(total, lengths, sampled=4, keep=2, metric="reward_per_token").tolist() == [0, 1]
    assert gfpo_keep(total, lengths, sampled=4, keep=3, metric="reward_per_token").tolist() == [0, 1, 3]


def test_groups_with_signal_ignores_unscorable() -> None:
    total = torch.tensor([1.0, 1.0, 0.0, 1.0, NAN, 1.0, NAN, NAN])
    assert groups_with_signal(total, 2).tolist() == [False, True, False, False]


def test_weighted_total_skips_none_and_is_nan_only_when_no_grader_scored() -> None:
    m = torch.tensor([[1.0, 2.0], [NAN, 2.0], [NAN, NAN]], dtype=torch.float64)
    t = weighted_total(m, [0.7, 0.3])
    assert t[:2].tolist() == pytest.approx([0.7 + 0.6, 0.6]) and math.isnan(float(t[2]))


def test_sum_then_normalize_is_grpo_on_the_weighted_sum() -> None:
    m = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    adv = combined_advantages(m, [2.0, 1.0], 2)
    # group 1: [2, 1] -> ±0.5 / (sqrt(.5) + eps); group 2: [3, 0] -> ±1.5 / (sqrt(4.5) + eps)
    a1, a2 = 0.5 / (math.sqrt(0.5) + STD_EPS), 1.5 / (math.sqrt(4.5) + STD_EPS)
    assert adv.tolist() == pytest.approx([a1, -a1, a2, -a2], rel=1e-6)
    assert torch.equal(adv, compute_advantages(weighted_total(m, [2.0, 1.0]), 2))


def test_normalize_then_sum_by_hand() -> None:
    # two graders on very different scales; per group each becomes ±1/sqrt(2)/(... ) before weighting
    m = torch.tensor([[1.0, 100.0], [0.0, 0.0], [0.0, 50.0], [1.0, 0.0]], dtype=torch.float64)
    adv = combined_advantages(m, [1.0, 1.0], 2, aggregation="normalize_then_sum")
    z0 = 0.5 / (math.sqrt(0.5) + STD_EPS)  # grader 0: values 1/0 per group
    z1a = 50.0 / (math.sqrt(5000.0) + STD_EPS)  # grader 1 group 1: 100/0
    z1b = 25.0 / (math.sqrt(1250.0) + STD_EPS)  # grader 1 group 2: 50/0
    s = torch.tensor([z0 + z1a, -z0 - z1a, -z0 + z1b, z0 - z1b], dtype=torch.float64)
    expected = (s - s.mean()) / (s.std() + STD_EPS)
    assert adv.tolist() == pytest.approx(expected.tolist(), rel=1e-6, abs=1e-9)


def test_config_rejects_inconsistent_strategies() -> None:
    with pytest.raises(ValueError, match="gfpo_sample_size must be larger"):
        GRPOConfig(group_size=8, gfpo_sample_size=8)
    with pytest.raises(ValueError, match="normalize_then_sum"):
        GRPOConfig(reward_aggregation="normalize_then_sum", advantage_estimator="rloo")


class ScriptedEngine:
    """Returns completions from a script: completion j of prompt p is ``script[p][j]`` (ids 1..), EOS = 0."""

    name = "scripted"

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.calls: list[list[str]] = []

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        self.calls.append(prompts)
        comps = [self.script[p][j] for p in prompts for j in range(sampling.group_size)]
        ids = [[ord(c) for c in text] + [0] for text in comps]
        return pack_rollout([[1]] * len(ids), ids, [0], 0, lambda t: "".join(chr(i) for i in t if i))

    def sync(self, model: Any, step: int) -> None: ...

    def suspend(self) -> None: ...

    def close(self) -> None: ...


class Exact:
    name = "exact"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        return GraderResult([1.0 if t == r["answer"] else 0.0 for t, r in zip(texts, rows, strict=True)])


ROWS = [{"prompt": p, "answer": "a"} for p in ("easy", "hard", "mixed", "mixed2")]
SCRIPT = {"easy": ["a"] * 4, "hard": ["b"] * 4, "mixed": ["a", "b", "bb", "a"], "mixed2": ["b", "a", "a", "bbb"]}


def _collect(cfg: GRPOConfig, engine: ScriptedEngine, cursor: PromptCursor, seed: int = 0) -> Any:
    return collect_batch(cfg, engine, [r["prompt"] for r in ROWS], ROWS, [Exact()], cursor, seed=seed, step=1)


def test_dynamic_sampling_drops_no_signal_groups_and_samples_more() -> None:
    cfg = GRPOConfig(group_size=4, batch_size=2, dynamic_sampling=True, dynamic_sampling_max_rounds=8, beta=0)
    engine = ScriptedEngine(SCRIPT)
    cursor = PromptCursor(len(ROWS), 2, seed=0)
    batch = _collect(cfg, engine, cursor)
    assert sorted(ROWS[i]["prompt"] for i in batch.row_idx) == ["mixed", "mixed2"]
    assert batch.ro.completion_ids.shape[0] == 8 and len(batch.rewards) == 8
    assert batch.stats.groups_trained == 2 and batch.stats.groups_dropped == batch.stats.groups_sampled - 2
    assert cursor.position == batch.stats.sampling_rounds == len(engine.calls)
    assert (batch.adv != 0).any() and torch.equal(batch.adv, compute_advantages(batch.rewards, 4))


def test_dynamic_sampling_cap_trains_on_what_it_has() -> None:
    script = {"easy": ["a"] * 4, "hard": ["b"] * 4, "mixed": ["a", "b", "b", "b"], "mixed2": ["b"] * 4}
    cfg = GRPOConfig(group_size=4, batch_size=2, dynamic_sampling=True, dynamic_sampling_max_rounds=1, beta=0)
    rows = [{"prompt": p, "answer": "a"} for p in ("easy", "mixed")]
    batch = collect_batch(
        cfg, ScriptedEngine(script), ["easy", "mixed"], rows, [Exact()], PromptCursor(2, 2, 0), seed=0, step=1
    )
    assert [rows[i]["prompt"] for i in batch.row_idx] == ["mixed"] and batch.stats.groups_dropped == 1
    # nothing with signal within the cap: the round is kept (zero advantages, nothing learned, still reported)
    rows = [{"prompt": p, "answer": "a"} for p in ("easy", "hard")]
    batch = collect_batch(
        cfg, ScriptedEngine(script), ["easy", "hard"], rows, [Exact()], PromptCursor(2, 2, 0), seed=0, step=1
    )
    assert len(batch.row_idx) == 2 and batch.adv.abs().sum() == 0


def test_gfpo_trains_on_the_kept_subset_with_its_own_baseline() -> None:
    script = {"mixed": ["aaaa", "a", "bb", "b", "a", "bbbbb"]}
    cfg = GRPOConfig(group_size=3, gfpo_sample_size=6, batch_size=1, beta=0)
    rows = [{"prompt": "mixed", "answer": "a"}]
    batch = collect_batch(
        cfg, ScriptedEngine(script), ["mixed"], rows, [Exact()], PromptCursor(1, 1, 0), seed=0, step=1
    )
    assert batch.ro.texts == ["a", "b", "a"]  # the three shortest, in sampling order
    assert torch.equal(batch.adv, compute_advantages(torch.tensor([1.0, 0.0, 1.0]), 3))


def test_overlong_shaping_never_makes_an_unscorable_sample_scorable() -> None:
    class Fails:
        name = "fails"

        def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
            return GraderResult(
                [None if t == "b" else 1.0 for t in texts], ["boom" if t == "b" else None for t in texts]
            )

    cfg = GRPOConfig(group_size=4, batch_size=1, beta=0, overlong_buffer_fraction=0.5, max_completion_tokens=2)
    rows = [{"prompt": "mixed", "answer": "a"}]
    batch = collect_batch(
        cfg, ScriptedEngine(SCRIPT), ["mixed"], rows, [Fails()], PromptCursor(1, 1, 0), seed=0, step=1
    )
    assert math.isnan(float(batch.rewards[1])) and batch.adv[1] == 0
    assert batch.errors == ["grader 'fails' on training row 1: boom"]


def test_every_sample_unscorable_is_a_user_error() -> None:
    class Never:
        name = "never"

        def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
            return GraderResult([None] * len(texts))

    cfg = GRPOConfig(group_size=4, batch_size=1, beta=0)
    with pytest.raises(UserError, match="no grader applied"):
        collect_batch(
            cfg, ScriptedEngine(SCRIPT), ["easy"], [ROWS[0]], [Never()], PromptCursor(1, 1, 0), seed=0, step=1
        )


def test_concat_rollouts_repads_both_sides() -> None:
    a = pack_rollout([[5, 6]], [[7, 0]], [0], 0, str)
    b = pack_rollout([[5, 6, 7]], [[8, 9, 9, 0]], [0], 0, str)
    c = concat_rollouts([a, b])
    assert c.prompt_ids.tolist() == [[0, 5, 6], [5, 6, 7]] and c.prompt_mask.tolist() == [[0, 1, 1], [1, 1, 1]]
    assert c.completion_mask.tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]


def test_a_grader_failing_on_most_completions_fails_the_job_with_its_error() -> None:
    class Broken:
        name = "acc"

        def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
            errs = [None if t == "a" else "ZeroDivisionError: division by zero" for t in texts]
            return GraderResult([1.0 if e is None else 0.0 for e in errs], errs)

    cfg = GRPOConfig(group_size=4, batch_size=1, beta=0, max_grader_error_rate=0.5)
    rows = [{"prompt": "mixed2", "answer": "a"}]
    batch = collect_batch(
        cfg, ScriptedEngine(SCRIPT), ["mixed2"], rows, [Broken()], PromptCursor(1, 1, 0), seed=0, step=1
    )
    assert batch.error_rates == {"acc": 0.5} and batch.rewards.tolist() == [0.0, 1.0, 1.0, 0.0]
    with pytest.raises(GraderFailed, match=r"grader 'acc' failed on 100% of completions at step 1 .*ZeroDivisionError"):
        collect_batch(cfg, ScriptedEngine(SCRIPT), ["hard"], rows, [Broken()], PromptCursor(1, 1, 0), seed=0, step=1)
