"""Group-relative advantages (GRPO, Shao et al., 2024, §4.1.2: outcome supervision).

For a batch laid out as consecutive groups of G completions of the same prompt, with rewards r (B = n·G):
    Â_i = (r_i − mean_g(r)) / (std_g(r) + eps)
std is the unbiased (Bessel, ddof=1) sample standard deviation and eps = 1e-4, as in TRL's GRPOTrainer, so a
group whose rewards are all equal gets Â = 0 and contributes no policy gradient. Every token of a completion
shares its sequence's advantage.

Unscorable completions (the grader raised or returned None, passed in as NaN) are left out of their group's
mean and std and get Â = 0, so a grader error never pushes the policy either way.
"""

from __future__ import annotations

import torch
from torch import Tensor

STD_EPS = 1e-4


def group_advantages(rewards: Tensor, group_size: int, *, scale: bool = True, eps: float = STD_EPS) -> Tensor:
    """Â for ``rewards`` of shape (B,), B a multiple of ``group_size``; returns (B,) float32."""
    if rewards.ndim != 1 or rewards.numel() % group_size:
        raise ValueError(f"rewards must be 1-D with a length divisible by group_size={group_size}")
    r = rewards.float().view(-1, group_size)  # (n, G)
    valid = ~torch.isnan(r)
    n_valid = valid.sum(dim=1, keepdim=True).clamp(min=1)
    r0 = torch.where(valid, r, torch.zeros_like(r))
    mean = r0.sum(dim=1, keepdim=True) / n_valid
    centred = torch.where(valid, r - mean, torch.zeros_like(r))
    adv = centred
    if scale:
        var = (centred**2).sum(dim=1, keepdim=True) / (n_valid - 1).clamp(min=1)
        adv = centred / (var.sqrt() + eps)
    # sum/n is not exact in float32: a group of equal rewards would keep a rounding residue (amplified by
    # 1/eps when scaled). Such a group carries no signal, so its advantage is exactly 0.
    lo = torch.where(valid, r, torch.full_like(r, float("inf"))).amin(dim=1, keepdim=True)
    hi = torch.where(valid, r, torch.full_like(r, float("-inf"))).amax(dim=1, keepdim=True)
    adv = torch.where(hi > lo, adv, torch.zeros_like(adv))
    return adv.reshape(-1)


def zero_std_fraction(rewards: Tensor, group_size: int) -> float:
    """Share of groups whose (valid) rewards are all equal: they carry no learning signal."""
    r = rewards.float().view(-1, group_size)
    lo = torch.where(torch.isnan(r), torch.full_like(r, float("inf")), r).amin(dim=1)
    hi = torch.where(torch.isnan(r), torch.full_like(r, float("-inf")), r).amax(dim=1)
    return float((~(hi > lo)).float().mean()) if r.numel() else 0.0
