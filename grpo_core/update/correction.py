"""The correction between the policy that sampled a rollout and the policy being trained.

A rollout is sampled by a behaviour policy μ (the sampling engine: another copy of the weights, other kernels, and
with ``max_staleness`` k > 0 weights up to k optimizer steps old) and trained against π_old, the trainer's policy
before this step's update (with μ = ``num_iterations`` = 1, the current weights, detached). The surrogate's ratio
π_θ/π_old is clipped as in PPO; the gap between π_old and μ is corrected by an importance weight on each token's
loss, the decoupled objective of Hilton et al. (2022) and AReaL (Fu et al., 2025), with the weight bounded as
Yao et al. (2025) and verl's rollout correction bound it:

    log ρ_it = log π_old(y_it) − log μ(y_it)                            (token level)
    log ρ_it = Σ_t' log π_old(y_it') − log μ(y_it')  for every t of i   (sequence level: one weight per sample)

    TIS (truncated):  u_it = min(ρ_it, C)
    MIS (masked):     u_it = ρ_it if 1/C ≤ ρ_it ≤ C, else 0    (the token, or the whole sample, gets no loss)

C is ``tis_cap``. The weight carries no gradient. Whatever the mode, the mismatch is measured on every token that
carries loss:

    mismatch KL = mean_it (ρ_it − 1 − log ρ_it)    (Schulman's k3 estimate of KL(μ ‖ π_old), ≥ 0, per token)

so a drifting sampler shows in the metrics before it shows in the reward. The measurements are sums (the caller
divides by the step's loss tokens), so a micro-batch split never changes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from grpo_core.schemas.config import ImportanceSamplingLevel as CorrectionLevel
from grpo_core.schemas.config import OffPolicyCorrection as CorrectionMode

# exp of a sequence's summed log-ratio is taken at most at this (e^80 ≈ 5.5e34 < float32's 3.4e38): a long, stale
# sample's product of ratios then stays finite, and every bound (C ≤ 100) is decided the same way
MAX_LOG_WEIGHT = 80.0


# What ``Correction.stats`` holds, in order (sums over the masked tokens, and two maxima):
# Σ u_it; max ρ_it before the bound (the rawest mismatch the step saw); tokens whose weight the bound changed
# (truncated: TIS, or masked: MIS); Σ (ρ − 1 − log ρ) per token; max |log π_old − log μ| of a token
STATS = ("weight_sum", "weight_max", "bounded_tokens", "kl_sum", "logp_diff_max")


@dataclass
class Correction:
    """The importance weights of a micro-batch and what they measure, kept on the device (``stats``) so the update
    adds them up without waiting for it; the named properties read them on the host."""

    weight: Tensor  # (B, T) u_it, 0 off the mask; no gradient
    stats: Tensor  # (len(STATS),) in the weights' dtype

    def _read(self, name: str) -> float:
        return float(self.stats[STATS.index(name)])

    weight_sum = property(lambda self: self._read("weight_sum"))
    weight_max = property(lambda self: self._read("weight_max"))
    bounded_tokens = property(lambda self: self._read("bounded_tokens"))
    kl_sum = property(lambda self: self._read("kl_sum"))
    logp_diff_max = property(lambda self: self._read("logp_diff_max"))


def importance_weights(
    old_logp: Tensor,
    behaviour_logp: Tensor,
    mask: Tensor,
    *,
    cap: float | None,
    mode: CorrectionMode = "tis",
    level: CorrectionLevel = "token",
) -> Correction:
    """u (see the module doc) for log-probs (B, T) of the trained policy and the behaviour policy under ``mask``
    (B, T) of loss tokens. ``cap`` None: the loss is not weighted (u = 1 on the mask), the mismatch still measured.

    The token-level TIS weight is ``exp(old − μ).clamp(max=C) · mask``, in that order, so a synchronous run with
    the default settings computes exactly what it did before this correction had modes."""
    m = mask.to(old_logp.dtype) if mask.dtype == torch.bool else mask
    log_ratio = old_logp.float() - behaviour_logp
    ratio = torch.exp(log_ratio)  # (B, T)
    on = m > 0
    if level == "sequence":
        seq = (log_ratio * m).sum(dim=1, keepdim=True)  # (B, 1)
        ratio_used = torch.exp(seq.clamp(max=MAX_LOG_WEIGHT)).expand_as(ratio)
    else:
        ratio_used = ratio
    if cap is None:
        weight = m.float()
        bounded = torch.zeros_like(on)
    elif mode == "tis":
        weight = ratio_used.clamp(max=cap) * m
        bounded = (ratio_used > cap) & on
    else:
        keep = (ratio_used <= cap) & (ratio_used >= 1.0 / cap)
        weight = torch.where(keep, ratio_used, torch.zeros_like(ratio_used)) * m
        bounded = ~keep & on
    k3 = (ratio - 1.0 - log_ratio) * m
    if m.numel():
        raw_max = torch.where(on, ratio_used, torch.zeros_like(ratio_used)).amax()  # 0 when no token carries loss
        diff_max = (log_ratio * m).abs().amax()
    else:
        raw_max = diff_max = torch.zeros((), device=weight.device)
    stats = torch.stack([weight.sum(), raw_max, bounded.sum().to(weight.dtype), k3.sum(), diff_max])
    return Correction(weight=weight.detach(), stats=stats.detach())
