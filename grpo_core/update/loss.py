"""The clipped policy loss of the GRPO family, as a pure function of tensors.

Per completion token t of sequence i (mask m_it = 1 on real completion tokens, 0 after EOS / on padding):
    log w_it = logp_it − old_logp_it                         (importance_sampling_level = "token", GRPO)
    log w_i  = Σ_t m_it (logp_it − old_logp_it) / |o_i|      ("sequence": GSPO, Zheng et al., 2025)
    ρ = exp(log w);  ρ̄ = min(ρ, δ) when a two-sided clip δ is set (TRL's ``delta``)
    ℓ_it = −min(ρ̄ Â_i, clip(ρ, 1 − ε_low, 1 + ε_high) Â_i) · e_it · u_it + β · KL_it − α · H_it
    e_it = 1, or with the 80/20 rule (Wang et al., 2025) 1 only on the top-ρ entropy tokens of the micro-batch
    u_it = 1, or with a separate sampling engine (vLLM) the truncated importance weight
           min(π_old,trainer / π_engine, C) (TIS, Yao et al., 2025; TRL's token_truncate) for their kernel mismatch
    H_it = entropy of π_θ at the position (the entropy bonus α is aggregated like the loss, so it keeps the
           accumulation invariance; TRL always token-averages it)
    KL_it: k1 = logp − ref;  k2 = ½ (logp − ref)²;  k3 = e^{ref−logp} − (ref − logp) − 1  (Schulman, 2020),
           or with ``kl_importance_weighted`` ρ · KL_it: the unclipped ratio with its gradient (the sequence ratio
           for GSPO), and never the TIS weight u_it, so the KL gradient is the unbiased reverse-KL gradient
           (DeepSeek-V3.2, 2025). This is TRL's ``use_bias_correction_kl``, on by default in TRL 1.16 and off here;
           on-policy it changes the gradient (by β·KL·∇logp) but not the value.

Aggregation of ℓ over the whole optimizer step, with B sequences and N completion tokens in the step:
    seq_mean_token_mean      Σ_i (Σ_t m ℓ / max(1, |o_i|)) / B          GRPO (Shao et al., 2024, eq. 3)
    token_mean               Σ_i Σ_t m ℓ / N                            DAPO (Yu et al., 2025)
    seq_mean_token_sum_norm  Σ_i Σ_t m ℓ / (B · L_max)                  Dr. GRPO (Liu et al., 2025), L_max = cap
    bnpo                     (Σ m ℓ / Σ m over the micro-batch) / n_micro    BNPO as TRL computes it
B, N and L_max are the step's, passed in, so for the first three the micro-batch losses sum to the full-batch
loss and gradient accumulation is exact; bnpo normalises per micro-batch (not invariant, as in TRL).

On-policy (μ = 1) ``old_logp`` is ``logp.detach()``: ρ ≡ 1 in value but its gradient is ∇logp, which is the
policy gradient; the loss value is then ≈ β·KL, as TRL documents. The function never logs: it returns metrics.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from grpo_core.schemas.config import ImportanceSamplingLevel, KLEstimator, LossAggregation


@dataclass(frozen=True)
class LossInputs:
    logp: Tensor  # (B, T) log π_θ of each sampled completion token (requires grad)
    old_logp: Tensor  # (B, T) log π_old (sampling policy), no grad
    advantages: Tensor  # (B,)
    mask: Tensor  # (B, T) 1.0 on completion tokens that count
    ref_logp: Tensor | None = None  # (B, T) log π_ref, required when beta > 0
    entropy: Tensor | None = None  # (B, T) policy entropy per position (with grad when entropy_coef > 0)
    is_weight: Tensor | None = None  # (B, T) truncated importance weight π_trainer/π_engine (no grad), or None


@dataclass(frozen=True)
class StepSize:
    """Counts over the whole optimizer step (all micro-batches), used as normalisers."""

    n_sequences: int
    n_tokens: float = 1.0
    max_completion_tokens: int = 1
    n_micro_batches: int = 1


# What ``LossOutputs.stats`` holds, in order: sums over the micro-batch's tokens, for the caller to add up
METRICS = ("tokens", "clipped_tokens", "clipped_low_tokens", "clipped_high_tokens", "kl_sum", "entropy_sum")


@dataclass(frozen=True)
class LossOutputs:
    loss: Tensor  # scalar, this micro-batch's share of the step loss
    stats: Tensor  # (len(METRICS),) in the loss's dtype and on its device, no gradient: added up without a sync

    @property
    def metrics(self) -> dict[str, float]:
        """``stats`` by name, read on the host (one sync: for tests and callers outside the update's loop)."""
        return dict(zip(METRICS, self.stats.tolist(), strict=True))


def kl_estimate(logp: Tensor, ref_logp: Tensor, estimator: KLEstimator = "k3") -> Tensor:
    """Per-token estimate of KL(π_θ || π_ref) from the sampled token only."""
    d = ref_logp - logp
    if estimator == "k3":
        return torch.exp(d) - d - 1.0
    if estimator == "k1":
        return -d
    if estimator == "k2":
        return 0.5 * d * d
    raise ValueError(f"unknown KL estimator {estimator!r}")


def _need_entropy(inp: LossInputs) -> Tensor:
    if inp.entropy is None:
        raise ValueError("entropy_coef > 0 or top_entropy_quantile < 1 needs the per-token entropy")
    return inp.entropy


def high_entropy_mask(entropy: Tensor, mask: Tensor, quantile: float) -> Tensor:
    """1.0 on the masked tokens whose entropy is in the top ``quantile`` share of this micro-batch's tokens
    (threshold: the (1 − quantile) quantile of their entropies, kept when ≥, as TRL's get_high_entropy_mask)."""
    with torch.no_grad():
        vals = entropy[mask.bool()].float()
        if vals.numel() == 0:
            return torch.zeros_like(mask)
        threshold = torch.quantile(vals, 1.0 - quantile)
        return ((entropy >= threshold) & mask.bool()).to(mask.dtype)


def policy_loss(
    inp: LossInputs,
    *,
    epsilon: float,
    epsilon_high: float,
    beta: float,
    n_sequences: int | None = None,
    step: StepSize | None = None,
    aggregation: LossAggregation = "seq_mean_token_mean",
    level: ImportanceSamplingLevel = "token",
    delta: float | None = None,
    kl_estimator: KLEstimator = "k3",
    kl_importance_weighted: bool = False,
    entropy_coef: float = 0.0,
    top_entropy_quantile: float = 1.0,
) -> LossOutputs:
    """Clipped surrogate + β·KL for one micro-batch, normalised by the step's counts (``step``)."""
    if step is None:
        if n_sequences is None:
            raise ValueError("pass step= (or n_sequences=)")
        step = StepSize(n_sequences=n_sequences)
    mask = inp.mask.to(inp.logp.dtype)
    adv = inp.advantages.to(inp.logp.dtype).unsqueeze(1)  # (B, 1)
    log_w = inp.logp - inp.old_logp  # (B, T)
    if level == "sequence":
        log_w = ((log_w * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).unsqueeze(1)  # (B, 1)
    ratio = torch.exp(log_w)
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon_high) * adv
    unclipped = (ratio if delta is None else torch.clamp(ratio, max=delta)) * adv
    per_token = -torch.minimum(unclipped, clipped).expand_as(mask)
    if top_entropy_quantile < 1.0:
        per_token = per_token * high_entropy_mask(_need_entropy(inp), mask, top_entropy_quantile)
    if inp.is_weight is not None:  # engine/trainer mismatch correction, on the policy term only (as TRL)
        per_token = per_token * inp.is_weight.to(per_token.dtype)
    if entropy_coef > 0:
        per_token = per_token - entropy_coef * _need_entropy(inp)
    kl = None
    if beta > 0:
        if inp.ref_logp is None:
            raise ValueError("beta > 0 needs ref_logp")
        kl = kl_estimate(inp.logp, inp.ref_logp, kl_estimator)
        if kl_importance_weighted:
            kl = kl * ratio  # (B, T) · (B, T) or (B, 1): ρ before the δ cap, as TRL
        per_token = per_token + beta * kl
    masked = per_token * mask
    if aggregation == "seq_mean_token_mean":
        loss = (masked.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).sum() / step.n_sequences
    elif aggregation == "token_mean":
        loss = masked.sum() / max(step.n_tokens, 1.0)
    elif aggregation == "seq_mean_token_sum_norm":
        loss = masked.sum() / (step.n_sequences * step.max_completion_tokens)
    elif aggregation == "bnpo":
        loss = masked.sum() / mask.sum().clamp(min=1.0) / step.n_micro_batches
    else:
        raise ValueError(f"unknown loss aggregation {aggregation!r}")

    with torch.no_grad():
        is_low = ((ratio < 1.0 - epsilon) & (adv < 0)).expand_as(mask)
        is_high = ((ratio > 1.0 + epsilon_high) & (adv > 0)).expand_as(mask)
        zero = mask.new_zeros(())
        stats = torch.stack(
            [
                mask.sum(),
                ((is_low | is_high) * mask).sum(),
                (is_low * mask).sum(),
                (is_high * mask).sum(),
                (kl * mask).sum() if kl is not None else zero,
                (inp.entropy * mask).sum() if inp.entropy is not None else zero,
            ]
        )
    return LossOutputs(loss=loss, stats=stats)
