"""Learning-rate schedule: linear warmup, then constant, linear decay to 0, or cosine decay to 0.

Counted in optimizer updates (steps × num_iterations). The scheduler's state is saved in checkpoints, so a
resumed run continues the same curve.
"""

from __future__ import annotations

import math

import torch

from grpo_core.schemas.config import GRPOConfig


def lr_factor(update: int, *, kind: str, warmup: int, total: int) -> float:
    """Multiplier of the base learning rate for optimizer update number ``update`` (0-based)."""
    if warmup and update < warmup:
        return (update + 1) / warmup
    if kind == "constant":
        return 1.0
    progress = (update - warmup) / max(1, total - warmup)
    if kind == "linear":
        return max(0.0, 1.0 - progress)
    if kind == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    raise ValueError(f"unknown lr_scheduler {kind!r}")


def make_scheduler(
    optimizer: torch.optim.Optimizer, cfg: GRPOConfig, total_updates: int
) -> torch.optim.lr_scheduler.LambdaLR:
    warmup = round(cfg.warmup_ratio * total_updates)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda u: lr_factor(u, kind=cfg.lr_scheduler, warmup=warmup, total=total_updates)
    )
