"""Outcome advantages: one scalar per completion, shared by all its tokens.

Rewards r (B = n·G) come as consecutive groups of G completions of the same prompt. NaN marks an unscorable
completion (the grader raised or returned None): it is left out of every mean and std and gets Â = 0, so a
grader error never pushes the policy either way (TRL does the same). Estimators (``estimator``):

- ``grpo`` (Shao et al., 2024, §4.1.2): c_i = r_i − mean_g(r), then by ``scale``:
  ``group``: Â = c / (std_g(r) + 1e-4) (GRPO; std with Bessel's correction, eps as TRL);
  ``batch``: Â = c / (std_batch(r) + 1e-4) (Lite-PPO, Liu et al., 2025); ``none``: Â = c (Dr. GRPO, Liu et al., 2025).
- ``rloo`` (Ahmadian et al., 2024): Â_i = r_i − mean_{j≠i} r_j = G/(G−1)·c_i (G = valid samples in the group),
  then ``scale`` as above (presets use ``none``).
- ``reinforce_pp_baseline`` (REINFORCE++-baseline, Hu et al., 2025; verl): c = r − mean_g(r), then whitened over
  the whole batch: Â = (c − mean_batch c) / sqrt(var_batch c + 1e-8) (unbiased variance, as verl); ``scale``
  does not apply.

For ``grpo`` and ``rloo`` a group whose rewards are all equal gets exactly Â = 0 (it carries no signal): float32
means are not exact, and a residue divided by std + eps would otherwise push every sample the same way.
"""

from __future__ import annotations

import torch
from torch import Tensor

from grpo_core.schemas.config import Estimator, Scale

STD_EPS = 1e-4
WHITEN_EPS = 1e-8


def nanstd(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Unbiased std ignoring NaN (TRL's nanstd); 0 when fewer than two values."""
    valid = ~torch.isnan(x)
    n = valid.sum(dim=dim, keepdim=keepdim) if dim is not None else valid.sum()
    mean = torch.nanmean(x, dim=dim, keepdim=True) if dim is not None else torch.nanmean(x)
    sq = torch.where(valid, (x - mean) ** 2, torch.zeros_like(x))
    ss = sq.sum(dim=dim, keepdim=keepdim) if dim is not None else sq.sum()
    return (ss / (n - 1).clamp(min=1)).sqrt()


def compute_advantages(
    rewards: Tensor, group_size: int, *, estimator: Estimator = "grpo", scale: Scale = "group"
) -> Tensor:
    """Â for ``rewards`` of shape (B,), B a multiple of ``group_size``; returns (B,) float32 with no NaN."""
    if rewards.ndim != 1 or rewards.numel() % group_size:
        raise ValueError(f"rewards must be 1-D with a length divisible by group_size={group_size}")
    r = rewards.float().view(-1, group_size)  # (n, G)
    valid = ~torch.isnan(r)
    n_valid = valid.sum(dim=1, keepdim=True)
    zeros = torch.zeros_like(r)
    mean = torch.where(valid, r, zeros).sum(dim=1, keepdim=True) / n_valid.clamp(min=1)
    centred = torch.where(valid, r - mean, zeros)
    if estimator == "reinforce_pp_baseline":
        c = torch.where(valid, centred, torch.full_like(r, float("nan"))).reshape(-1)
        var = nanstd(c) ** 2
        adv = (c - torch.nanmean(c)) / torch.sqrt(var + WHITEN_EPS)
        return torch.nan_to_num(adv, nan=0.0)
    if estimator == "rloo":
        centred = centred * n_valid / (n_valid - 1).clamp(min=1)
    elif estimator != "grpo":
        raise ValueError(f"unknown advantage estimator {estimator!r}")
    if scale == "group":
        adv = centred / (nanstd(torch.where(valid, r, torch.nan), dim=1, keepdim=True) + STD_EPS)
    elif scale == "batch":
        adv = centred / (nanstd(rewards.float()) + STD_EPS)
    elif scale == "none":
        adv = centred
    else:
        raise ValueError(f"unknown advantage scale {scale!r}")
    lo = torch.where(valid, r, torch.full_like(r, float("inf"))).amin(dim=1, keepdim=True)
    hi = torch.where(valid, r, torch.full_like(r, float("-inf"))).amax(dim=1, keepdim=True)
    return torch.where(hi > lo, adv, zeros).reshape(-1)


def zero_std_fraction(rewards: Tensor, group_size: int) -> float:
    """Share of groups whose (valid) rewards are all equal: they carry no learning signal."""
    r = rewards.float().view(-1, group_size)
    lo = torch.where(torch.isnan(r), torch.full_like(r, float("inf")), r).amin(dim=1)
    hi = torch.where(torch.isnan(r), torch.full_like(r, float("-inf")), r).amax(dim=1)
    return float((~(hi > lo)).float().mean()) if r.numel() else 0.0
