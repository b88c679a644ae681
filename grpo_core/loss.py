"""The clipped GRPO policy loss with a k3 KL penalty, as a pure function of tensors.

Per completion token t of sequence i (mask m_it = 1 on real completion tokens, 0 after EOS / on padding):
    ρ_it   = exp(logp_it − old_logp_it)
    ℓ_it   = −min(ρ_it Â_i, clip(ρ_it, 1 − ε_low, 1 + ε_high) Â_i) + β · k3_it
    k3_it  = exp(ref_it − logp_it) − (ref_it − logp_it) − 1         (Schulman's unbiased, positive estimator)
    L      = Σ_i (Σ_t m_it ℓ_it / max(1, Σ_t m_it)) / n_sequences     ("seq_mean_token_mean", GRPO's eq. 3)

``n_sequences`` is the number of sequences in the *whole* optimizer step, passed in, so summing this loss over
micro-batches gives exactly the gradient of the full batch (gradient accumulation is invariant).

On-policy (μ = 1) ``old_logp`` is ``logp.detach()``: ρ ≡ 1 in value but its gradient is ∇logp, which is the
policy gradient; the loss value is then ≈ β·KL, as TRL documents. The function never logs: it returns metrics.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class LossInputs:
    logp: Tensor  # (B, T) log π_θ of each sampled completion token (requires grad)
    old_logp: Tensor  # (B, T) log π_old (sampling policy), no grad
    advantages: Tensor  # (B,)
    mask: Tensor  # (B, T) 1.0 on completion tokens that count
    ref_logp: Tensor | None = None  # (B, T) log π_ref, required when beta > 0


@dataclass(frozen=True)
class LossOutputs:
    loss: Tensor  # scalar, this micro-batch's share of the step loss
    metrics: dict[str, float]  # sums over this micro-batch's tokens/sequences, to be reduced by the caller


def k3_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimate of KL(π_θ || π_ref) from the sampled token only (always ≥ 0)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


def policy_loss(inp: LossInputs, *, epsilon: float, epsilon_high: float, beta: float, n_sequences: int) -> LossOutputs:
    """Clipped surrogate + β·k3, aggregated per sequence then averaged over ``n_sequences``."""
    mask = inp.mask.to(inp.logp.dtype)
    adv = inp.advantages.to(inp.logp.dtype).unsqueeze(1)  # (B, 1)
    ratio = torch.exp(inp.logp - inp.old_logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl = None
    if beta > 0:
        if inp.ref_logp is None:
            raise ValueError("beta > 0 needs ref_logp")
        kl = k3_kl(inp.logp, inp.ref_logp)
        per_token = per_token + beta * kl
    tokens = mask.sum(dim=1)  # (B,)
    per_seq = (per_token * mask).sum(dim=1) / tokens.clamp(min=1.0)
    loss = per_seq.sum() / n_sequences

    with torch.no_grad():
        is_low = (ratio < 1.0 - epsilon) & (adv < 0)
        is_high = (ratio > 1.0 + epsilon_high) & (adv > 0)
        n_tok = float(mask.sum())
        metrics = {
            "tokens": n_tok,
            "clipped_tokens": float(((is_low | is_high).to(mask.dtype) * mask).sum()),
            "kl_sum": float((kl * mask).sum()) if kl is not None else 0.0,
        }
    return LossOutputs(loss=loss, metrics=metrics)
