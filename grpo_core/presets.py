"""Named recipes from the literature: a recipe fills hyperparameters the user did not set.

Pure data (no torch), so the API expands a recipe exactly as the worker will run it and shows the result in the
job object. Values are the papers' where they apply to a LoRA run; anything can be overridden field by field.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # Shao et al., 2024 (DeepSeekMath, §4.2): G=64, lr 1e-6, β=0.04, 1024 prompts/step (here 16 per step).
    "deepseekmath": {"group_size": 64, "learning_rate": 1e-6, "beta": 0.04, "epsilon": 0.2, "batch_size": 16},
    # DeepSeek-R1-Zero style, as reproduced by Open-R1/TRL: G=16, lr 3e-6, β=0.001.
    "r1_zero": {"group_size": 16, "learning_rate": 3e-6, "beta": 0.001, "epsilon": 0.2, "batch_size": 32},
    # Yu et al., 2025 (DAPO): clip-higher 0.2/0.28, token-level loss, no KL, overlong filtering and soft overlong
    # punishment with a buffer of 1/5 of the length cap (4096 of 20480 in the paper), dynamic sampling.
    "dapo": {
        "group_size": 16,
        "learning_rate": 1e-6,
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
