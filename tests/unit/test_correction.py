"""The off-policy correction (grpo_core.update.correction) and the staleness bound, against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.pipeline import ReadyBatch, drop_stale, fresh_groups, staleness, staleness_histogram
from grpo_core.rollout.sampling import StepBatch
from grpo_core.schemas.metrics import SamplingStats
from grpo_core.update.correction import importance_weights

CPU = torch.device("cpu")
# one sample of three tokens, the last padding: log π_old − log μ = +0.5, −0.5 (ρ = e^0.5, e^-0.5)
OLD = torch.tensor([[0.0, -1.0, -3.0]], device=CPU)
MU = torch.tensor([[-0.5, -0.5, 0.0]], device=CPU)
MASK = torch.tensor([[1, 1, 0]], device=CPU)
E5, EM5 = math.exp(0.5), math.exp(-0.5)


def test_token_tis_truncates_at_the_cap_and_measures_the_k3_mismatch() -> None:
    c = importance_weights(OLD, MU, MASK, cap=1.2, mode="tis", level="token")
    assert c.weight.tolist()[0] == pytest.approx([1.2, EM5, 0.0])
    assert c.weight_sum == pytest.approx(1.2 + EM5)
    assert c.weight_max == pytest.approx(E5)
    assert c.bounded_tokens == 1.0
    assert c.kl_sum == pytest.approx((E5 - 1 - 0.5) + (EM5 - 1 + 0.5))
    assert c.logp_diff_max == pytest.approx(0.5)


def test_token_mis_masks_the_weights_outside_the_band() -> None:
    # band [1/1.5, 1.5] = [0.667, 1.5]: e^0.5 = 1.65 above it, e^-0.5 = 0.61 below it: both masked
    c = importance_weights(OLD, MU, MASK, cap=1.5, mode="mis", level="token")
    assert c.weight.tolist()[0] == [0.0, 0.0, 0.0] and c.bounded_tokens == 2.0
    # band [1/1.7, 1.7] = [0.588, 1.7]: both kept, unbounded
    c = importance_weights(OLD, MU, MASK, cap=1.7, mode="mis", level="token")
    assert c.weight.tolist()[0] == pytest.approx([E5, EM5, 0.0]) and c.bounded_tokens == 0.0


def test_sequence_level_weights_every_token_by_the_sample_ratio() -> None:
    old = torch.tensor([[0.0, -1.0, -3.0], [-0.2, -0.3, 0.0]], device=CPU)
    mu = torch.tensor([[-0.5, -0.5, 0.0], [-0.5, -0.5, 0.0]], device=CPU)
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]], device=CPU)
    c = importance_weights(old, mu, mask, cap=1.5, mode="tis", level="sequence")
    # sample 1: Σ log ρ = 0.5 − 0.5 = 0 -> 1; sample 2: 0.3 + 0.2 = 0.5 -> e^0.5 = 1.65, truncated at 1.5
    assert c.weight.tolist()[0] == pytest.approx([1.0, 1.0, 0.0])
    assert c.weight.tolist()[1] == pytest.approx([1.5, 1.5, 0.0])
    assert c.bounded_tokens == 2.0 and c.weight_max == pytest.approx(E5)
    mis = importance_weights(old, mu, mask, cap=1.5, mode="mis", level="sequence")
    assert mis.weight.tolist()[1] == [0.0, 0.0, 0.0] and mis.weight.tolist()[0] == pytest.approx([1.0, 1.0, 0.0])


def test_no_cap_leaves_the_loss_unweighted_and_still_measures() -> None:
    c = importance_weights(OLD, MU, MASK, cap=None)
    assert c.weight.tolist()[0] == [1.0, 1.0, 0.0] and c.bounded_tokens == 0.0
    assert c.kl_sum > 0


def test_default_token_tis_is_the_formula_the_synchronous_loop_always_used() -> None:
    g = torch.Generator(device=CPU).manual_seed(0)
    old = -torch.rand(4, 9, generator=g, device=CPU) * 3
    mu = old + torch.randn(4, 9, generator=g, device=CPU) * 0.3
    mask = (torch.rand(4, 9, generator=g, device=CPU) > 0.2).long()
    c = importance_weights(old, mu, mask, cap=2.0)
    assert torch.equal(c.weight, torch.exp(old.float() - mu).clamp(max=2.0) * mask)  # bit for bit


def test_staleness_bound_and_histogram() -> None:
    versions = torch.tensor([3, 3, 2, 2, 1, 1], device=CPU)  # three groups of 2, trained at step 5 (from version 4)
    assert staleness(versions, 5).tolist() == [1, 1, 2, 2, 3, 3]
    assert fresh_groups(versions, 5, 2, 2).tolist() == [True, True, False]
    assert staleness_histogram(versions, 5) == {"1": 2, "2": 2, "3": 2}


def _batch(versions: list[int], group_size: int) -> StepBatch:
    n = len(versions)
    ids = torch.arange(n, device=CPU).unsqueeze(1)
    ro = Rollout(
        ids,
        torch.ones_like(ids),
        ids,
        torch.ones_like(ids),
        torch.zeros(n, dtype=torch.bool, device=CPU),
        [str(i) for i in range(n)],
        versions=torch.tensor(versions, device=CPU),
    )
    vals = torch.arange(n, dtype=torch.float32, device=CPU)
    return StepBatch(
        ro=ro,
        row_idx=list(range(n // group_size)),
        scores=vals.unsqueeze(1).double(),
        grader_names=["g"],
        overlong=torch.zeros(n, device=CPU),
        rewards=vals.double(),
        adv=vals,
        errors=[],
        stats=SamplingStats(sampling_rounds=1, groups_sampled=n // group_size, groups_dropped=0, groups_trained=3),
    )


def test_a_batch_never_trains_on_samples_older_than_the_bound() -> None:
    ready = ReadyBatch(_batch([4, 4, 2, 2, 3, 3], 2), cursor=7)
    kept = drop_stale(ready, step=5, max_staleness=1, group_size=2)  # versions ≥ 3 allowed
    assert kept.dropped == 2 and kept.cursor == 7
    assert kept.batch.ro.texts == ["0", "1", "4", "5"] and kept.batch.row_idx == [0, 2]
    assert kept.batch.adv.tolist() == [0.0, 1.0, 4.0, 5.0] and kept.batch.stats.groups_trained == 2
    assert drop_stale(ready, step=5, max_staleness=2, group_size=2) is ready
    with pytest.raises(RuntimeError, match="older than max_staleness"):
        drop_stale(ready, step=9, max_staleness=1, group_size=2)
