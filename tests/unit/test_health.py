from typing import Any

from grpo_core.health import HealthConfig, HealthMonitor
from grpo_core.metrics_schema import StepMetrics
from tests.helpers import step_metrics


def m(step: int, train_reward_mean: float = 0.5, valid_reward_mean: float | None = None, **kw: Any) -> StepMetrics:
    base = {"entropy": 1.0, "completion_length_mean": 20.0, "frac_reward_zero_std": 0.2, "kl": 0.01}
    data = step_metrics(step, 20, reward=train_reward_mean, **(base | kw))
    data["scores"]["valid_reward_mean"] = valid_reward_mean
    return StepMetrics.model_validate(data)


def test_healthy_run_is_quiet() -> None:
    mon = HealthMonitor(HealthConfig())
    assert all(mon.check(m(s)) == [] for s in range(1, 20))


def test_each_failure_mode_warns_once_until_it_clears() -> None:
    mon = HealthMonitor(HealthConfig(window=2))
    assert mon.check(m(1, entropy=0.01))[0].startswith("Entropy collapse at step 1")
    assert mon.check(m(2, entropy=0.01)) == []  # still active: no repeat
    assert mon.check(m(3)) == []  # cleared
    assert mon.check(m(4, entropy=0.01))  # again


def test_length_inflation_against_the_first_steps() -> None:
    mon = HealthMonitor(HealthConfig())
    for s in (1, 2, 3):
        mon.check(m(s, completion_length_mean=10.0))
    assert mon.check(m(4, completion_length_mean=24.0)) == []
    assert "Completion length inflation at step 5: 30 tokens vs 10" in mon.check(m(5, completion_length_mean=30.0))[0]


def test_no_signal_kl_and_reward_hacking() -> None:
    mon = HealthMonitor(HealthConfig(window=3))
    warned = [w for s in range(1, 4) for w in mon.check(m(s, frac_reward_zero_std=1.0))]
    assert len(warned) == 1 and warned[0].startswith("No learning signal")
    assert mon.check(m(4, kl=3.0))[0].startswith("KL blow-up at step 4")
    assert mon.check(m(5, train_reward_mean=0.5, valid_reward_mean=0.6)) == []
    hack = mon.check(m(6, train_reward_mean=0.8, valid_reward_mean=0.4))
    assert hack and hack[0].startswith("Possible reward hacking at step 6")
