"""Config rules: ranges, OpenAI's "auto", cross-field checks, step counts (import walls: test_layering.py)."""

import pytest
from pydantic import ValidationError

from grpo_core.schemas.config import GRPOConfig


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


def test_readme_lists_each_field_under_its_kind() -> None:
    """The docs' "Hyperparameters" section (docs/concepts/recipes.md) names every field under the class that
    declares it."""
    import re
    from pathlib import Path

    from grpo_core.schemas.config import (
        AlgorithmConfig,
        ExecutionConfig,
        GRPOConfig,
        MonitoringConfig,
        OpenAICompatFields,
    )

    readme = (Path(__file__).resolve().parents[2] / "docs" / "concepts" / "recipes.md").read_text()
    section = readme.split("### Hyperparameters: what is computed, and how it runs", 1)[1].split("\n### ", 1)[0]
    kinds = section.split("\n- **")[1:]
    assert len(kinds) == 4
    for kind, cls in zip(kinds, (AlgorithmConfig, ExecutionConfig, MonitoringConfig, OpenAICompatFields), strict=True):
        named = set(re.findall(r"`(\w+)`", kind))
        assert cls.__name__ in named and set(cls.model_fields) <= named, (cls.__name__, set(cls.model_fields) - named)
    assert sum(
        len(c.model_fields) for c in (AlgorithmConfig, ExecutionConfig, MonitoringConfig, OpenAICompatFields)
    ) == len(GRPOConfig.model_fields)


def test_fsdp_samples_with_the_merged_engine_only() -> None:
    """FSDP2 shards the training copy; generate() through it (ranks stopping at different lengths) or a vLLM
    engine with its own whole copy are refused up front, naming the way out (grpo_core.hardware.sharding)."""
    import pytest
    from pydantic import ValidationError

    from grpo_core.schemas.config import GRPOConfig

    assert GRPOConfig.model_validate({"sharding": "fsdp"}).rollout_engine == "auto"
    assert GRPOConfig.model_validate({"sharding": "fsdp", "rollout_engine": "merged"}).sharding == "fsdp"
    for engine in ("transformers", "vllm"):
        with pytest.raises(
            ValidationError, match=f"sharding 'fsdp' samples with the merged engine: rollout_engine '{engine}'"
        ):
            GRPOConfig.model_validate({"sharding": "fsdp", "rollout_engine": engine})
