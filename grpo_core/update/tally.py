"""The update's sums over its micro-batches, kept on the device and read once.

Each micro-batch's loss and metrics (grpo_core.update.loss.LossOutputs.stats) and its importance-weight
measurements (grpo_core.update.correction.Correction.stats) are added into small fp64 tensors where they were
computed; ``read`` copies them to the host in one transfer after the last backward. Reading each with ``float()``
between forward and backward made the host wait for the device a dozen times per micro-batch, with nothing queued
behind the wait (issue 44: 55 syncs per update).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor

from grpo_core.hardware.distributed import World, reduce_sums
from grpo_core.update.correction import STATS, Correction
from grpo_core.update.loss import METRICS, LossOutputs


@dataclass
class UpdateSums:
    """What one optimizer step's update adds up over its micro-batches (and ranks), for grpo_core.metrics to divide:
    per-token means are over ``updated_tokens``, the tokens that carried loss, so no micro-batch split changes them.

    ``is_weight_sum`` and ``logp_diff_max`` measure a separate sampling engine (merged, vLLM) against the trainer:
    None when the trainer's own forward sampled (no importance correction, nothing to measure)."""

    loss: float = 0.0  # Σ of the micro-batches' losses, each normalised by the step's counts: the step's loss
    updated_tokens: float = 0.0  # tokens that carried loss
    clipped_tokens: float = 0.0  # of those, clipped on either side
    clipped_low_tokens: float = 0.0
    clipped_high_tokens: float = 0.0
    kl_sum: float = 0.0  # Σ of the per-token KL estimate (β > 0)
    entropy_sum: float = 0.0
    is_weight_sum: float | None = None  # Σ of the bounded importance weights π_trainer / π_engine
    logp_diff_max: float | None = None  # the largest |log π_trainer − log π_engine| of a token
    is_weight_max: float | None = None  # the largest importance weight before its bound
    is_bounded_tokens: float | None = None  # tokens whose weight the bound truncated (TIS) or masked (MIS)
    mismatch_kl_sum: float | None = None  # Σ of the per-token k3 estimate of KL(π_engine ‖ π_trainer)
    tokens: float = 0.0  # the step's completion tokens, all ranks' (StepSize.n_tokens): not summed again

    def reduced(self, world: World, device: torch.device) -> UpdateSums:
        """These sums over every rank, in fp64 (grpo_core.hardware.distributed.reduce_sums: a field's name is its
        key, so ``logp_diff_max`` is the maximum over the ranks); a measurement no rank made stays None."""
        mine = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tokens"}
        out = reduce_sums(world, {k: v for k, v in mine.items() if v is not None}, device)
        return UpdateSums(**out, tokens=self.tokens)


# UpdateSums' names for LossOutputs.stats and Correction.stats
_LOSS_FIELDS = {"tokens": "updated_tokens"}
_FIX_FIELDS = {
    "weight_sum": "is_weight_sum",
    "weight_max": "is_weight_max",
    "bounded_tokens": "is_bounded_tokens",
    "kl_sum": "mismatch_kl_sum",
    "logp_diff_max": "logp_diff_max",
}


class Tally:
    """``UpdateSums`` accumulating on ``device``: ``add`` and ``add_correction`` queue a few small kernels and
    never wait; ``read`` is the one host sync."""

    def __init__(self, device: torch.device, tokens: float) -> None:
        self.tokens = tokens
        self.loss = torch.zeros(1 + len(METRICS), dtype=torch.float64, device=device)
        self.fix_sum: Tensor | None = None
        self.fix_max: Tensor | None = None

    def add(self, out: LossOutputs) -> None:
        self.loss += torch.cat([out.loss.detach().view(1).to(out.stats.dtype), out.stats])

    def add_correction(self, fix: Correction) -> None:
        stats = fix.stats.double()
        if self.fix_sum is None or self.fix_max is None:
            self.fix_sum, self.fix_max = stats, stats.clone()
            return
        self.fix_sum += stats
        torch.maximum(self.fix_max, stats, out=self.fix_max)

    def read(self, world: World, device: torch.device) -> UpdateSums:
        """The sums on the host (one copy), over every rank."""
        parts = [self.loss] + ([] if self.fix_sum is None or self.fix_max is None else [self.fix_sum, self.fix_max])
        values = torch.cat(parts).tolist()
        out = UpdateSums(loss=values[0], tokens=self.tokens)
        for name, v in zip(METRICS, values[1 : 1 + len(METRICS)], strict=True):
            setattr(out, _LOSS_FIELDS.get(name, name), v)
        if len(parts) > 1:
            sums, maxima = values[1 + len(METRICS) :][: len(STATS)], values[1 + len(METRICS) + len(STATS) :]
            for k, name in enumerate(STATS):
                setattr(out, _FIX_FIELDS[name], maxima[k] if name.endswith("_max") else sums[k])
        return out.reduced(world, device)
