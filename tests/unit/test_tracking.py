"""worker.tracking's pieces that need no backend: metric names, and a backend outage that must not cost the job
(tests/integration/test_tracking.py runs W&B offline and an MLflow file store for real)."""

from __future__ import annotations

from typing import Any

from grpo_core.schemas.metrics import StepMetrics
from tests.helpers import claim, step_metrics
from worker.settings import WorkerSettings
from worker.tracking import Tracker, flat_metrics, tracker_for


def test_metrics_are_flattened_by_name_without_the_rollouts() -> None:
    m = StepMetrics.model_validate(step_metrics(2, reward=0.25))
    flat = flat_metrics(m)
    assert flat["step"] == 2.0 and flat["scores/train_reward_mean"] == 0.25 and "loss" in flat
    assert not any(k.startswith("samples") for k in flat)
    assert all(isinstance(v, float) for v in flat.values())


def test_no_tracker_without_integrations_or_mlflow(tmp_path: Any) -> None:
    settings = WorkerSettings(state_dir=tmp_path)
    assert tracker_for(claim(), settings, lambda *_: None) is None
    assert tracker_for(claim(), settings.model_copy(update={"mlflow_tracking_uri": "file:///x"}), print) is not None


def test_a_backend_that_fails_is_said_once_and_switched_off(tmp_path: Any) -> None:
    said: list[tuple[str, str]] = []
    tracker = Tracker(claim(), WorkerSettings(state_dir=tmp_path), lambda m, level: said.append((m, level)))

    class Broken:
        def log(self, *_: Any, **__: Any) -> None:
            raise ConnectionError("wandb.ai unreachable")

    tracker.wandb = Broken()
    tracker.step(StepMetrics.model_validate(step_metrics(1)))
    tracker.step(StepMetrics.model_validate(step_metrics(2)))  # switched off: no second warning
    assert said == [("W&B tracking stopped: ConnectionError: wandb.ai unreachable", "warn")]
    assert not tracker.active
