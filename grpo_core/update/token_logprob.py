"""log π(token) and the entropy of π at each position, from logits, without a full-vocabulary log-softmax tensor.

Shared by the padded path (grpo_core.update.logprobs: the model's (B, C, V) logits) and the fused head
(grpo_core.update.fused_head: one chunk of (n, V) logits at a time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor


class TokenLogProb(torch.autograd.Function):
    """log softmax(z)[index] per position, with a one-pass backward: dz = g · (onehot(index) − softmax(z)).

    Autograd through ``gather(z) − logsumexp(z)`` builds, per sequence, a zero-filled scatter for the gather, a
    softmax for the logsumexp and an add of the two — three (T, V) tensors in fp32 and their kernels; here the
    backward writes each row's gradient once, in the logits' dtype. Forward and backward work one sequence at a
    time, so no (B, T, V) fp32 tensor ever exists.
    """

    @staticmethod
    def forward(ctx: Any, logits: Tensor, index: Tensor) -> Tensor:
        out = torch.empty(index.shape, dtype=torch.float32, device=logits.device)
        lse = torch.empty(index.shape, dtype=torch.float32, device=logits.device)
        for i in range(logits.shape[0]):
            row = logits[i].float()
            lse[i] = torch.logsumexp(row, dim=-1)
            out[i] = row.gather(-1, index[i].unsqueeze(-1)).squeeze(-1) - lse[i]
        ctx.save_for_backward(logits, index, lse)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        logits, index, lse = ctx.saved_tensors
        grad_logits = torch.empty_like(logits)
        for i in range(logits.shape[0]):
            g = grad[i].float().unsqueeze(-1)  # (T, 1)
            p = (logits[i].float() - lse[i].unsqueeze(-1)).exp_().mul_(-g)
            p.scatter_add_(-1, index[i].unsqueeze(-1), g)
            grad_logits[i] = p
        return grad_logits, None


# torch.autograd.Function.apply is untyped; this is its signature for TokenLogProb
_token_logprob: Callable[[Tensor, Tensor], Tensor] = TokenLogProb.apply


def logprobs_and_entropy(
    logits: Tensor, index: Tensor, *, entropy_grad: bool | None = False
) -> tuple[Tensor, Tensor | None]:
    """Per-token log-prob of ``index`` and the entropy H = logsumexp(z) − Σ softmax(z)·z, one sequence at a time.

    ``entropy_grad=None`` skips the entropy; ``False`` computes it without gradient (a metric); ``True`` keeps
    its gradient (for an entropy bonus).
    """
    logp = _token_logprob(logits, index)
    if entropy_grad is None:
        return logp, None
    ents = []
    with torch.set_grad_enabled(bool(entropy_grad) and torch.is_grad_enabled()):
        for i in range(logits.shape[0]):  # (T, V) at a time
            row = logits[i].float()
            ents.append(torch.logsumexp(row, dim=-1) - (torch.softmax(row, dim=-1) * row).sum(dim=-1))
    return logp, torch.stack(ents)
