import pytest
import torch

from grpo_core.rollout.shaping import soft_overlong_penalty
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.presets import (
    LORA_LEARNING_RATE,
    LORA_LR_SCALE,
    PAPER_LEARNING_RATES,
    PRESETS,
    learning_rate_note,
)


def test_soft_overlong_penalty_by_hand() -> None:
    # L_max 10, buffer 4: free up to 6 tokens, then linear down to -1 at 10
    got = soft_overlong_penalty(torch.tensor([3, 6, 7, 8, 10]), 10, 4)
    assert got.tolist() == pytest.approx([0.0, 0.0, -0.25, -0.5, -1.0])


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_recipe_expands_to_a_valid_config(name: str) -> None:
    cfg = GRPOConfig.model_validate({"recipe": name})
    for key, value in PRESETS[name].items():
        assert getattr(cfg, key) == value


@pytest.mark.parametrize("name", sorted(PAPER_LEARNING_RATES))
def test_a_recipe_learning_rate_is_its_papers_scaled_for_lora(name: str) -> None:
    cfg = GRPOConfig.model_validate({"recipe": name})
    scaled = PAPER_LEARNING_RATES[name] * LORA_LR_SCALE
    assert cfg.learning_rate == pytest.approx(max(scaled, LORA_LEARNING_RATE))  # the papers' x 10, floored
    note = learning_rate_note(name, cfg.learning_rate, True, 1e-5)
    assert note is not None and f"{PAPER_LEARNING_RATES[name]:g} (its paper's, full fine-tuning) x 10" in note
    assert ("raised to the LoRA default" in note) == (scaled < LORA_LEARNING_RATE)
    assert learning_rate_note(name, 2e-4, True, 1e-5) is None  # the user's own value: nothing to explain


def test_user_values_win_over_the_recipe() -> None:
    cfg = GRPOConfig.model_validate({"recipe": "dapo", "group_size": 4, "beta": 0.01})
    assert (cfg.group_size, cfg.beta, cfg.epsilon_high, cfg.loss_aggregation) == (4, 0.01, 0.28, "token_mean")


def test_unknown_recipe_is_rejected() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="recipe"):
        GRPOConfig.model_validate({"recipe": "ppo"})
