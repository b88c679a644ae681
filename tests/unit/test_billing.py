"""Money's pure parts on tiny inputs against hand-computed values: prices by device kind, a cost, a job's budget
alerts, the estimate's least squares and its calibration (api.usage.prices, api.usage.budgets, api.billing.estimate)."""

from __future__ import annotations

from typing import Any

import pytest

from api.billing.estimate import Observed, Rates, Shape, _fit, calibrate, spread
from api.core.settings import ApiSettings
from api.usage.budgets import job_alert
from api.usage.prices import Prices, prices_of
from api.usage.schemas import DEVICE_HOURS, Cost

H100 = "NVIDIA H100 80GB HBM3"


def test_a_kind_takes_its_own_price_then_the_longest_key_it_contains_then_default() -> None:
    p = Prices("USD", {"H100": 2.0, "NVIDIA H100 80GB": 3.0, "cpu": 0.1, "default": 1.0})
    assert p.per_device_hour(H100) == 3.0  # the longest key the kind contains
    assert p.per_device_hour("h100") == 2.0  # case-insensitive
    assert p.per_device_hour("cpu (AMD EPYC 9B14)") == 0.1
    assert p.per_device_hour("NVIDIA A100") == 1.0  # default
    assert Prices("USD", {"H100": 2.0, "cpu": 0.1}).per_device_hour("A100") == 2.0  # no default: the highest


def test_a_cost_is_priced_hours_and_tokens_less_the_discount() -> None:
    p = Prices("USD", {"H100": 2.0, "cpu": 0.5}, inference_per_million_tokens=4.0, discount=0.25)
    cost = p.cost({H100: 1800.0, "cpu (x)": 7200.0}, inference_tokens=500_000)
    # (0.5 h × 2 + 2 h × 0.5 + 0.5 M × 4) × 0.75 = 3.0
    assert cost == Cost(amount=3.0, unit="USD", device_hours=2.5)
    assert p.device_seconds(3.0, H100) == pytest.approx(3.0 / (2.0 / 3600 * 0.75))


def test_with_no_price_anywhere_costs_are_device_hours() -> None:
    p = prices_of(ApiSettings(), None)
    assert p.unit == DEVICE_HOURS and not p.priced
    assert p.cost({H100: 5400.0}, inference_tokens=10**9) == Cost(amount=1.5, unit=DEVICE_HOURS, device_hours=1.5)
    own = prices_of(ApiSettings(price_device_hour={"H100": 2.0}), {"device_hour": {"H100": 1.5}, "discount": 0.1})
    assert (own.unit, own.per_device_hour(H100), own.discount) == ("USD", 1.5, 0.1)  # the project's over the service's


def test_a_jobs_budget_warns_at_80_percent_and_is_reached_at_the_cap() -> None:
    def cost(amount: float, hours: float) -> Cost:
        return Cost(amount=amount, unit="USD", device_hours=hours)

    assert job_alert(cost(7.9, 0), {"max_cost": 10}) == (None, "7.90 USD of its max_cost 10.00 USD")
    assert job_alert(cost(8.0, 0), {"max_cost": 10})[0] == "warning"
    assert job_alert(cost(10.0, 0), {"max_cost": 10})[0] == "reached"
    # the nearer of the two caps decides, and the message names it
    assert job_alert(cost(1.0, 0.95), {"max_cost": 10, "max_device_hours": 1}) == (
        "warning",
        "0.95 of its max_device_hours 1",
    )
    assert job_alert(cost(99.0, 9.0), None) == (None, "")


def test_the_fit_solves_two_coefficients_and_falls_back_to_one() -> None:
    # y = 3·x1 + 0.5·x2 exactly
    assert _fit([(1, 10, 8.0), (2, 10, 11.0), (1, 40, 23.0)]) == pytest.approx((3.0, 0.5))
    # one point: all of it on the coefficient that fits it (a tie goes to the first unless told)
    assert _fit([(1, 10, 20.0)]) == pytest.approx((20.0, 0.0))
    assert _fit([(1, 10, 20.0)], prefer_second=True) == pytest.approx((0.0, 2.0))
    # a negative solution is not physical: clipped to the better single coefficient
    assert _fit([(1, 1, 1.0), (1, 2, 0.0)])[0] >= 0


def observed(shape: Shape, rates: Rates) -> Observed:
    """A job that ran exactly as ``rates`` say, once."""
    tokens = rates.length * shape.max_tokens
    trained = round(shape.steps * shape.batch * shape.group * tokens)
    sampling = shape.steps * rates.sampling(shape)
    training = shape.steps * rates.training(shape)
    grading = shape.steps * shape.batch * shape.drawn * shape.columns * rates.grader
    evals = shape.eval_prompts * rates.eval_prompt
    seconds = rates.device_seconds(shape)
    calls = shape.steps * shape.batch * shape.drawn * shape.columns
    return Observed("m", shape, seconds, 1, shape.steps, trained, trained, calls, sampling, training, grading, evals)


def test_calibration_recovers_the_rates_that_made_its_jobs() -> None:
    truth = Rates(
        decode=0.05,
        row=0.003,
        update=0.02,
        token=0.004,
        grader=0.001,
        eval_prompt=0.2,
        setup=12.0,
        per_step=0.4,
        length=0.5,
    )
    shapes = [
        Shape(steps=6, batch=4, group=8, drawn=8, max_tokens=24, columns=1, eval_prompts=48, devices=1),
        Shape(steps=5, batch=4, group=4, drawn=4, max_tokens=48, columns=1, eval_prompts=24, devices=1),
        Shape(steps=12, batch=3, group=16, drawn=16, max_tokens=16, columns=2, eval_prompts=0, devices=1),
    ]
    rates = calibrate([observed(s, truth) for s in shapes])
    for name in ("decode", "row", "update", "token", "grader", "eval_prompt", "setup", "per_step", "length"):
        assert getattr(rates, name) == pytest.approx(getattr(truth, name), rel=1e-3), name
    new = Shape(steps=9, batch=8, group=4, drawn=4, max_tokens=32, columns=1, eval_prompts=24, devices=2)
    assert rates.device_seconds(new) == pytest.approx(truth.device_seconds(new), rel=1e-3)
    # jobs that follow the model exactly predict each other exactly: the range is its floor
    assert spread([observed(s, truth) for s in shapes]) == pytest.approx(0.05)
    assert spread([observed(s, truth) for s in shapes[:2]]) == 0.25  # fewer than 3: the stated ±25 %


def test_a_shape_counts_its_validation_runs() -> None:
    from grpo_core.schemas.config import GRPOConfig

    cfg = GRPOConfig(group_size=4, batch_size=2, eval_interval=5, max_completion_tokens=16)
    assert Shape.of(cfg, 12, 1, 10, 1).eval_prompts == 30  # steps 5, 10 and the last (12)
    assert Shape.of(cfg, 10, 1, 10, 1).eval_prompts == 20  # the last is step 10
    assert Shape.of(cfg, 10, 1, 0, 1).eval_prompts == 0  # no validation file


def test_a_validation_step_says_the_reward_it_gained_over_the_base_model_per_unit_of_cost() -> None:
    from types import SimpleNamespace

    from api.jobs.schemas import MetricsPoint
    from tests.helpers import step_metrics

    scores = {"train_reward_mean": 0.6, "train_reward_std": 0.1, "valid_reward_mean": 0.75, "graders": []}
    cost = {"amount": 0.5, "unit": "USD", "device_hours": 0.2}
    row: Any = SimpleNamespace(step=10, created_at=1, data=step_metrics(10, 10, scores=scores) | {"cost": cost})
    point = MetricsPoint.from_row(row, base_reward=0.25)
    assert point.cost == Cost(**cost)
    assert point.reward_gain == pytest.approx(0.5) and point.reward_gain_per_cost == pytest.approx(1.0)
    plain: Any = SimpleNamespace(step=3, created_at=1, data=step_metrics(3, 10))  # no validation, no base: nothing
    assert MetricsPoint.from_row(plain, base_reward=0.25).reward_gain is None
