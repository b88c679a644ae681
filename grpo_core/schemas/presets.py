"""Named recipes from the literature: a recipe fills hyperparameters the user did not set.

Pure data (no torch), so the API expands a recipe exactly as the worker will run it and shows the result in the
job object. Values are the papers' where they apply to a LoRA run; anything can be overridden field by field.

Learning rates are the exception: the papers fine-tuned every weight, and every run here trains a LoRA adapter,
whose best learning rate is about 10x full fine-tuning's whatever the rank (Schulman et al., 2025, "LoRA Without
Regret"). Copying 1e-6 into a LoRA run gives a job that barely moves, so a recipe's learning rate is its paper's
times ``LORA_LR_SCALE``, but never below ``LORA_LEARNING_RATE``, and the job's events say so
(``learning_rate_note``).

Why the floor: the papers' rates are for 7B models, and the best rate grows as models get narrower (Tinker's LoRA
rule, 5e-4 x (2000 / hidden size)^0.781 for Llama). bench/learning.py measures it on SmolLM2-135M: dapo's 1e-6 x 10
barely moves the validation reward where 1e-4 learns (docs/benchmarks.md, "Learning per second").
"""

from __future__ import annotations

from typing import Any

LORA_LR_SCALE = 10.0
# The LoRA learning rate the service defaults to (grpo_core.schemas.config.DEFAULT_LEARNING_RATE) and the floor of a
# recipe's scaled rate.
LORA_LEARNING_RATE = 1e-4
# The full fine-tuning learning rates the papers used; the recipes below run at these × LORA_LR_SCALE, floored.
PAPER_LEARNING_RATES = {"deepseekmath": 1e-6, "r1_zero": 3e-6, "dapo": 1e-6}


def _scaled(recipe: str) -> float:
    """The paper's rate × LORA_LR_SCALE, rounded so it reads 1e-05, not 9.999999999999999e-06."""
    return float(f"{PAPER_LEARNING_RATES[recipe] * LORA_LR_SCALE:.6g}")


def _lora(recipe: str) -> float:
    """The recipe's learning rate for a LoRA run: its paper's scaled, or the LoRA default when that is higher."""
    return max(_scaled(recipe), LORA_LEARNING_RATE)


PRESETS: dict[str, dict[str, Any]] = {
    # Shao et al., 2024 (DeepSeekMath, §4.2): G=64, lr 1e-6 (full FT), β=0.04, 1024 prompts/step (here 16).
    "deepseekmath": {
        "group_size": 64,
        "learning_rate": _lora("deepseekmath"),
        "beta": 0.04,
        "epsilon": 0.2,
        "batch_size": 16,
    },
    # DeepSeek-R1-Zero style, as reproduced by Open-R1/TRL: G=16, lr 3e-6 (full FT), β=0.001.
    "r1_zero": {"group_size": 16, "learning_rate": _lora("r1_zero"), "beta": 0.001, "epsilon": 0.2, "batch_size": 32},
    # Yu et al., 2025 (DAPO): lr 1e-6 (full FT), clip-higher 0.2/0.28, token-level loss, no KL, overlong filtering
    # and soft overlong punishment with a buffer of 1/5 of the length cap (4096 of 20480 in the paper), dynamic
    # sampling.
    "dapo": {
        "group_size": 16,
        "learning_rate": _lora("dapo"),
        "beta": 0.0,
        "epsilon": 0.2,
        "epsilon_high": 0.28,
        "loss_aggregation": "token_mean",
        "mask_truncated_completions": True,
        "overlong_buffer_fraction": 0.2,
        "dynamic_sampling": True,
    },
    # Liu et al., 2025 (Dr. GRPO): no std scaling, constant normaliser (sum / (B · max tokens)).
    "dr_grpo": {"scale_rewards": "none", "loss_aggregation": "seq_mean_token_sum_norm"},
    # Zheng et al., 2025 (GSPO): sequence-level ratio, tiny clip range.
    "gspo": {"importance_sampling_level": "sequence", "epsilon": 3e-4, "epsilon_high": 4e-4, "beta": 0.0},
    # Shrivastava et al., 2025 (GFPO): sample 16, train on the 8 with the best reward per token.
    "gfpo": {"group_size": 8, "gfpo_sample_size": 16, "gfpo_metric": "reward_per_token"},
    # Ahmadian et al., 2024 (RLOO): leave-one-out baseline, no std scaling.
    "rloo": {"advantage_estimator": "rloo", "scale_rewards": "none"},
    # Hu et al., 2025 (REINFORCE++-baseline): group mean baseline, batch whitening.
    "reinforce_pp": {"advantage_estimator": "reinforce_pp_baseline", "kl_estimator": "k2"},
}


def expand(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its ``recipe``'s values filled in under the user's own (the user always wins)."""
    name = data.get("recipe")
    if not isinstance(name, str) or name not in PRESETS:
        return data  # a missing, unknown or non-string name is reported by the config's Literal check
    return {**PRESETS[name], **data}


def learning_rate_note(recipe: str | None, learning_rate: float, given: bool, default: float) -> str | None:
    """What a job's events say about where its learning rate came from, so a LoRA-scaled value never surprises
    anyone moving from a full fine-tuning recipe; None when the user set it themselves (``given``: the field was in
    the request; a value equal to the recipe's is reported as the recipe's)."""
    why = "LoRA's best learning rate is about 10x full fine-tuning's (Schulman et al., 2025)"
    if recipe in PAPER_LEARNING_RATES and learning_rate == PRESETS[recipe]["learning_rate"]:
        scaled = _scaled(recipe)
        floor = "" if learning_rate == scaled else f" = {scaled:g}, raised to the LoRA default (the papers' are 7B's)"
        return (
            f"learning_rate {learning_rate:g}: recipe {recipe}'s {PAPER_LEARNING_RATES[recipe]:g} (its paper's, full "
            f"fine-tuning) x {LORA_LR_SCALE:g}{floor} for a LoRA adapter: {why}; set learning_rate to override"
        )
    if not given and learning_rate == default:
        return f"learning_rate {learning_rate:g}: the default for a LoRA adapter ({why}); set learning_rate to override"
    return None
