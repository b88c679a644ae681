"""What several GPU tests compute: the trainer's own log-probs of a rollout's completion tokens on the GPU, the
reference every sampler's recorded log-probs are held to."""

from __future__ import annotations

from typing import Any

import torch

from grpo_core.rollout.batch import Rollout
from grpo_core.update.logprobs import completion_logprobs


def trainer_logprobs(model: Any, ro: Rollout, temperature: float, precision: str) -> torch.Tensor:
    """(B, C) log-probs of ``ro``'s completions under ``model`` (bf16 autocast for ``precision="bf16"``, as the
    trainer runs), on the host in fp32."""
    r = ro.to(next(model.parameters()).device)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
        lp = completion_logprobs(
            model, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask, temperature=temperature
        )
    return lp.float().cpu()
