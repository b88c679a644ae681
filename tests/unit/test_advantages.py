import math

import pytest
import torch

from grpo_core.rewards.advantages import STD_EPS, compute_advantages, zero_std_fraction


def test_two_groups_by_hand() -> None:
    # group 1: [1, 0] -> mean .5, sample std sqrt(.5); group 2: [2, 2, ...] handled in another test
    r = torch.tensor([1.0, 0.0, 3.0, 1.0])
    adv = compute_advantages(r, 2)
    s = math.sqrt(0.5)
    expected = [
        0.5 / (s + STD_EPS),
        -0.5 / (s + STD_EPS),
        1.0 / (math.sqrt(2.0) + STD_EPS),
        -1.0 / (math.sqrt(2.0) + STD_EPS),
    ]
    assert adv.tolist() == pytest.approx(expected, rel=1e-6)


def test_group_of_four_bessel() -> None:
    r = torch.tensor([1.0, 0.0, 0.0, 0.0])
    # mean .25; deviations .75, -.25 x3; var (ddof=1) = (.5625 + 3*.0625)/3 = .25 -> std .5
    adv = compute_advantages(r, 4)
    assert adv.tolist() == pytest.approx([0.75 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001], rel=1e-6)


@pytest.mark.parametrize("value", [0.1, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("group_size", [3, 6, 8])
def test_equal_rewards_give_exactly_zero_advantage(value: float, group_size: int) -> None:
    # float32 sum/n leaves a residue for e.g. 8 x 0.7; it must not survive the division by std + eps
    adv = compute_advantages(torch.full((2 * group_size,), value), group_size)
    assert adv.tolist() == [0.0] * (2 * group_size)
    for est in ("grpo", "rloo"):
        out = compute_advantages(torch.full((group_size,), value), group_size, estimator=est, scale="none")
        assert out.abs().max() == 0.0


def test_unscaled_is_mean_centred() -> None:
    adv = compute_advantages(torch.tensor([3.0, 1.0]), 2, scale="none")
    assert adv.tolist() == [1.0, -1.0]


def test_nan_rewards_are_left_out_and_get_zero() -> None:
    r = torch.tensor([1.0, float("nan"), 0.0, 0.0])
    adv = compute_advantages(r, 4)
    # valid [1, 0, 0]: mean 1/3, var ddof1 = ((2/3)^2 + 2*(1/3)^2)/2 = 1/3
    std = math.sqrt(1 / 3)
    assert adv[1].item() == 0.0
    assert adv[0].item() == pytest.approx((2 / 3) / (std + STD_EPS), rel=1e-6)
    assert adv[2].item() == pytest.approx((-1 / 3) / (std + STD_EPS), rel=1e-6)


def test_rejects_ragged_batch() -> None:
    with pytest.raises(ValueError, match="divisible"):
        compute_advantages(torch.zeros(5), 2)


def test_zero_std_fraction() -> None:
    assert zero_std_fraction(torch.tensor([1.0, 1.0, 0.0, 1.0]), 2) == 0.5


def test_rloo_is_leave_one_out() -> None:
    adv = compute_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), 4, estimator="rloo", scale="none")
    # r_0 - mean(r_1, r_2, r_3) = 1 - 1/3
    assert adv.tolist() == pytest.approx([2 / 3, -2 / 3, -2 / 3, 2 / 3], rel=1e-6)


def test_batch_scale_divides_by_the_batch_std_of_rewards() -> None:
    adv = compute_advantages(torch.tensor([1.0, 0.0, 3.0, 1.0]), 2, scale="batch")
    std = math.sqrt(4.75 / 3)  # unbiased std of [1, 0, 3, 1]
    assert adv.tolist() == pytest.approx([x / (std + STD_EPS) for x in (0.5, -0.5, 1.0, -1.0)], rel=1e-6)


def test_reinforce_pp_baseline_whitens_group_centred_rewards_over_the_batch() -> None:
    adv = compute_advantages(torch.tensor([1.0, 0.0, 3.0, 1.0]), 2, estimator="reinforce_pp_baseline")
    # centred [.5, -.5, 1, -1]: mean 0, unbiased var (.25 + .25 + 1 + 1) / 3
    d = math.sqrt(2.5 / 3 + 1e-8)
    assert adv.tolist() == pytest.approx([0.5 / d, -0.5 / d, 1 / d, -1 / d], rel=1e-6)


def test_estimators_give_zero_to_unscorable_samples() -> None:
    r = torch.tensor([1.0, float("nan"), 0.0, 2.0])
    for est in ("grpo", "rloo", "reinforce_pp_baseline"):
        adv = compute_advantages(r, 4, estimator=est)
        assert adv[1].item() == 0.0 and not torch.isnan(adv).any()
