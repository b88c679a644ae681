"""Config rules, and the import boundaries DESIGN.md promises (checked in fresh interpreters)."""

import subprocess
import sys

import pytest
from pydantic import ValidationError

from grpo_core.config import GRPOConfig


def test_defaults_and_auto() -> None:
    cfg = GRPOConfig.model_validate({"n_epochs": "auto", "batch_size": "auto", "group_size": 4})
    assert cfg.n_epochs == 1 and cfg.batch_size == 4 and cfg.clip_high == cfg.epsilon


@pytest.mark.parametrize(
    ("field", "value"),
    [("group_size", 1), ("beta", -0.1), ("epsilon", 0), ("temperature", 0), ("learning_rate", 1.0), ("batch_size", 0)],
)
def test_out_of_range_rejected(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        GRPOConfig.model_validate({field: value})


def test_epsilon_high_below_epsilon_rejected() -> None:
    with pytest.raises(ValidationError, match="epsilon_high"):
        GRPOConfig(epsilon=0.2, epsilon_high=0.1)


def test_unknown_field_rejected() -> None:
    with pytest.raises(ValidationError, match="grup_size"):
        GRPOConfig.model_validate({"grup_size": 4})


def test_total_steps() -> None:
    assert GRPOConfig(batch_size=4, n_epochs=2).total_steps(10) == 6
    assert GRPOConfig(max_steps=7).total_steps(10) == 7


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {m.split(".")[0] for m in out.split()} | set(out.split())


def test_config_and_grader_schemas_do_not_import_torch() -> None:
    mods = _modules_after("import grpo_core.config, grpo_core.rewards.schemas, grpo_core.models")
    assert not mods & {"torch", "transformers", "peft"}


def test_grpo_core_imports_no_service_framework() -> None:
    mods = _modules_after(
        "import grpo_core.trainer, grpo_core.checkpoint, grpo_core.rewards.graders, grpo_core.data, grpo_core.models"
    )
    assert "torch" in mods  # the check really loaded the training stack
    assert not mods & {"fastapi", "celery", "sqlalchemy", "boto3", "api", "worker"}


def test_worker_does_not_import_the_api_database_layer() -> None:
    mods = _modules_after("import worker.tasks, worker.runner")
    assert "celery" in mods
    assert not {m for m in mods if m.startswith("api.db") or m.startswith("api.services") or m == "sqlalchemy.orm"}


def test_api_does_not_import_worker_or_torch() -> None:
    mods = _modules_after("import api.main")
    assert "fastapi" in mods
    assert not mods & {"worker", "torch", "transformers"}
