"""The losses of the training API, as pure functions of per-token tensors, with Tinker's definitions.

They follow the Tinker docs ("Loss Functions", tinker-docs.thinkingmachines.ai/losses): every loss is a SUM over
tokens, never a mean, so the loss of a batch is the sum of its datums' losses and a client that splits a batch
into chunks (the SDK does, at 1024 datums) gets the gradient of the whole. Per token t, with logp_t the trained
policy's log-prob of the target token, w_t the weight (1 when an RL datum has none), q_t the sampler's log-prob of
the same token (the ``logprobs`` input) and A_t the advantage:

    cross_entropy         loss = Σ_t −w_t · logp_t
    importance_sampling   ρ_t = exp(logp_t − q_t);   loss = Σ_t −w_t · ρ_t · A_t
    ppo                   loss = Σ_t −w_t · min(ρ_t · A_t, clip(ρ_t, lo_t, hi_t) · A_t)
                          lo_t, hi_t: the per-token ``clip_low_threshold`` / ``clip_high_threshold`` inputs, or
                          the config's (default 0.8 / 1.2: Tinker's ε = 0.2 on both sides, Schulman et al., 2017)
    cispo                 loss = Σ_t −w_t · sg(clip(ρ_t, lo_t, hi_t)) · logp_t · A_t
                          (MiniMax-M1, Chen et al., 2025: the clipped ratio weighs the log-prob's gradient, so a
                          clipped token still learns, at most hi times as fast; default 0.8 / 1.2 as ppo's)
    gspo                  GSPO-token (Zheng et al., 2025), per datum d with its marked tokens M_d:
                          s_d = exp(mean_{t ∈ M_d} (logp_t − q_t));  s_t = sg(s_d) · exp(logp_t − sg(logp_t))
                          loss = Σ_t −w_t · min(s_t · A_t, clip(s_t, lo_t, hi_t) · A_t)
                          M_d: the tokens ``sequence_ratio_mask`` marks (≠ 0), or, when the datum leaves it out,
                          the tokens that carry loss (w ≠ 0, A ≠ 0); a datum with none has s_d = 1. Every token
                          carries its sequence's ratio as its value and its own log-prob's gradient, so per-token
                          advantages still work (Tinker's "GSPO-token"); the default range is the paper's,
                          1 − 3e-4 .. 1 + 4e-4.

The Tinker docs' RL formulas have no weights: w_t = 1 (the default) reproduces them exactly, and w_t = 0 masks a
token. ρ is per token: no sequence-level ratio, no KL term, no entropy bonus (grpo_core.update.loss has those, for
the job trainer).

Metrics are ``name:reduction`` with exactly one colon (the SDK splits every key on ':' and reduces chunks by the
suffix). ``loss:sum`` always; ``tokens:sum`` counts the tokens that carry loss (w ≠ 0, and A ≠ 0 for the RL
losses); ``ratio:mean`` and ``clip_fraction:mean`` are means over those tokens (0 when there are none; gspo's
ratio is each token's sequence ratio). A token counts as clipped for ppo and gspo when the clipped term is the one
the min picks and it differs from the unclipped one, i.e. its gradient is cut: ρ > hi with A > 0, or ρ < lo with
A < 0; for cispo when its ratio lies outside [lo, hi] (its weight is the bound, its gradient is kept).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from grpo_core.training_api.spec import BatchError, loss_spec


@dataclass(frozen=True)
class LossOutput:
    loss: Tensor  # scalar, a sum over tokens (with gradient when logp has one)
    metrics: dict[str, float]  # "name:reduction" -> value


def _mean_over(values: Tensor, counted: Tensor) -> float:
    """Mean of ``values`` over the ``counted`` tokens, 0 when none counts (a token not counted, whose ratio may
    be inf, never enters the sum)."""
    picked = values[counted.bool()]
    return float(picked.mean()) if picked.numel() else 0.0


@torch.no_grad()
def _rl_metrics(
    loss: Tensor, ratio: Tensor, weights: Tensor, advantages: Tensor, clipped: Tensor | None = None
) -> dict[str, float]:
    """An RL loss's metrics (the module docstring): the sum, the tokens that carry loss, their mean ratio and, for
    a clipped loss, the share of them ``clipped`` marks."""
    counted = ((weights != 0) & (advantages != 0)).float()
    metrics = {
        "loss:sum": float(loss.detach()),
        "tokens:sum": float(counted.sum()),
        "ratio:mean": _mean_over(ratio.detach(), counted),
    }
    if clipped is not None:
        metrics["clip_fraction:mean"] = _mean_over(clipped.float(), counted)
    return metrics


def cross_entropy(logp: Tensor, weights: Tensor) -> LossOutput:
    """Σ_t −w_t · logp_t over ``logp`` (N,) and ``weights`` (N,)."""
    loss = -(weights * logp).sum()
    with torch.no_grad():
        tokens = float((weights != 0).sum())
    return LossOutput(loss, {"loss:sum": float(loss.detach()), "tokens:sum": tokens})


def importance_sampling(logp: Tensor, sampling_logp: Tensor, advantages: Tensor, weights: Tensor) -> LossOutput:
    """Σ_t −w_t · exp(logp_t − q_t) · A_t over (N,) tensors (REINFORCE with an importance ratio)."""
    ratio = torch.exp(logp - sampling_logp)
    loss = -(weights * ratio * advantages).sum()
    return LossOutput(loss, _rl_metrics(loss, ratio, weights, advantages))


def ppo(
    logp: Tensor,
    sampling_logp: Tensor,
    advantages: Tensor,
    weights: Tensor,
    clip_low: Tensor | float = 0.8,
    clip_high: Tensor | float = 1.2,
) -> LossOutput:
    """Σ_t −w_t · min(ρ_t A_t, clip(ρ_t, lo_t, hi_t) A_t) over (N,) tensors; ``clip_low`` / ``clip_high``: (N,)
    per-token thresholds or one number for all."""
    return _clipped_surrogate(torch.exp(logp - sampling_logp), advantages, weights, clip_low, clip_high)


def _clipped_surrogate(
    ratio: Tensor, advantages: Tensor, weights: Tensor, clip_low: Tensor | float, clip_high: Tensor | float
) -> LossOutput:
    """Σ_t −w_t · min(r_t A_t, clip(r_t, lo_t, hi_t) A_t) and its metrics, for per-token ratios ``r`` (ppo's own,
    gspo's sequence ratios)."""
    lo, hi = _bounds(ratio, clip_low, clip_high)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, min=lo, max=hi) * advantages
    loss = -(weights * torch.minimum(unclipped, clipped)).sum()
    return LossOutput(loss, _rl_metrics(loss, ratio, weights, advantages, clipped=clipped < unclipped))


def _bounds(ratio: Tensor, clip_low: Tensor | float, clip_high: Tensor | float) -> tuple[Tensor, Tensor]:
    lo = clip_low if isinstance(clip_low, Tensor) else torch.full_like(ratio, clip_low)
    hi = clip_high if isinstance(clip_high, Tensor) else torch.full_like(ratio, clip_high)
    return lo, hi


def cispo(
    logp: Tensor,
    sampling_logp: Tensor,
    advantages: Tensor,
    weights: Tensor,
    clip_low: Tensor | float = 0.8,
    clip_high: Tensor | float = 1.2,
) -> LossOutput:
    """Σ_t −w_t · sg(clip(ρ_t, lo_t, hi_t)) · logp_t · A_t over (N,) tensors: the clipped ratio is a weight, not
    a term the min may pick, so no token's gradient is cut."""
    ratio = torch.exp(logp - sampling_logp)
    lo, hi = _bounds(ratio, clip_low, clip_high)
    weight = torch.clamp(ratio, min=lo, max=hi).detach()
    loss = -(weights * weight * logp * advantages).sum()
    return LossOutput(loss, _rl_metrics(loss, ratio, weights, advantages, clipped=(ratio < lo) | (ratio > hi)))


def sequence_log_ratios(log_ratio: Tensor, marked: Tensor, lengths: Sequence[int]) -> Tensor:
    """(N,) per token, the mean of ``log_ratio`` (N,) over the ``marked`` (N,) tokens of its datum, the S datums
    laid end to end with ``lengths``; 0 for a datum with no marked token. One scatter per sum, and no host sync
    (``output_size`` tells repeat_interleave its length)."""
    device = log_ratio.device
    seg = torch.repeat_interleave(
        torch.arange(len(lengths), device=device),
        torch.tensor(list(lengths), device=device),
        output_size=log_ratio.numel(),
    )
    m = marked.to(log_ratio.dtype)
    total = torch.zeros(len(lengths), dtype=log_ratio.dtype, device=device).index_add_(0, seg, log_ratio * m)
    count = torch.zeros_like(total).index_add_(0, seg, m)
    return (total / count.clamp(min=1.0))[seg]


def gspo(
    logp: Tensor,
    sampling_logp: Tensor,
    advantages: Tensor,
    weights: Tensor,
    lengths: Sequence[int],
    sequence_mask: Tensor | None = None,
    clip_low: Tensor | float = 1 - 3e-4,
    clip_high: Tensor | float = 1 + 4e-4,
) -> LossOutput:
    """GSPO-token over datums of ``lengths`` laid end to end in the (N,) tensors: every token's ratio has its
    datum's geometric-mean ratio as value and its own log-prob's gradient, then ppo's clipped min. ``sequence_mask``
    (N,): the tokens the ratio averages (≠ 0; NaN where a datum left the mask out: its tokens that carry loss)."""
    counted = (weights != 0) & (advantages != 0)
    marked = counted
    if sequence_mask is not None:  # NaN: the datum left the mask out
        marked = torch.where(torch.isnan(sequence_mask), counted, sequence_mask != 0)
    seq_log_ratio = sequence_log_ratios((logp - sampling_logp).detach(), marked, lengths)  # (N,) per token
    ratio = torch.exp(seq_log_ratio + logp - logp.detach())
    return _clipped_surrogate(ratio, advantages, weights, clip_low, clip_high)


def loss_of(
    loss_fn: str,
    logp: Tensor,
    inputs: Mapping[str, Tensor],
    config: Mapping[str, float],
    lengths: Sequence[int] | None = None,
) -> LossOutput:
    """The loss ``loss_fn`` of ``logp`` (N,) with its per-token ``inputs`` (N,) each, an optional input left out
    taking its default (grpo_core.training_api.spec.LossSpec.fill) and the config its defaults. ``lengths``: the
    datums' token counts when ``logp`` holds several end to end (gspo's ratio is per datum; default one datum).
    The inputs are expected checked (spec.check_batch); an unknown loss raises spec.BatchError."""
    spec = loss_spec(loss_fn)

    def get(name: str) -> Tensor | float:
        if name in inputs:
            return inputs[name].to(logp.dtype)
        if spec.inputs[name].required:
            raise BatchError(f"loss_fn_inputs.{name}", f"missing: {loss_fn} needs it")
        return spec.fill(name, config)

    def per_token(name: str) -> Tensor:
        value = get(name)
        return value if isinstance(value, Tensor) else torch.full_like(logp, value)

    weights = per_token("weights")
    if loss_fn == "cross_entropy":
        return cross_entropy(logp, weights)
    q, adv = per_token("logprobs"), per_token("advantages")
    if loss_fn == "importance_sampling":
        return importance_sampling(logp, q, adv, weights)
    lo, hi = get("clip_low_threshold"), get("clip_high_threshold")
    if loss_fn == "cispo":
        return cispo(logp, q, adv, weights, lo, hi)
    if loss_fn == "gspo":
        mask = inputs["sequence_ratio_mask"].to(logp.dtype) if "sequence_ratio_mask" in inputs else None
        return gspo(logp, q, adv, weights, lengths or [logp.numel()], mask, lo, hi)
    return ppo(logp, q, adv, weights, lo, hi)
