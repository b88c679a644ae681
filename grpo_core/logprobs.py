"""Per-token log-probabilities of the sampled completion tokens only.

The model sees [left-padded prompt | completion] with an attention mask and explicit position ids (so left
padding never shifts RoPE positions). Only the last C+1 positions' logits are computed (``logits_to_keep``),
divided by the sampling temperature — the policy that sampled the tokens is softmax(z/T), so the ratio and KL
must use the same distribution — and the log-prob of each sampled token is ``z_t − logsumexp(z)``, without
materialising a full-vocabulary log-softmax tensor.
"""

from __future__ import annotations

import torch
from torch import Tensor


def logprobs_and_entropy(
    logits: Tensor, index: Tensor, *, entropy_grad: bool | None = False
) -> tuple[Tensor, Tensor | None]:
    """Per-token log-prob of ``index`` and the entropy H = logsumexp(z) − Σ softmax(z)·z, one sequence at a time.

    ``entropy_grad=None`` skips the entropy; ``False`` computes it without gradient (a metric); ``True`` keeps
    its gradient (for an entropy bonus).
    """
    lps, ents = [], []
    for i in range(logits.shape[0]):  # (T, V) at a time
        row = logits[i].float()
        lse = torch.logsumexp(row, dim=-1)
        lps.append(row.gather(-1, index[i].unsqueeze(-1)).squeeze(-1) - lse)
        if entropy_grad is not None:
            with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
                ents.append(lse - (torch.softmax(row, dim=-1) * row).sum(dim=-1))
    return torch.stack(lps), (torch.stack(ents) if ents else None)


def completion_logprobs(
    model: torch.nn.Module,
    prompt_ids: Tensor,  # (B, P)
    prompt_mask: Tensor,  # (B, P)
    completion_ids: Tensor,  # (B, C)
    completion_mask: Tensor,  # (B, C)
    *,
    temperature: float,
    entropy_grad: bool | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """(B, C) float32 log π(completion token | prefix) at the given temperature; with ``entropy_grad`` not None,
    also the (B, C) entropy of π at each position (see ``logprobs_and_entropy``)."""
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    # Completion positions after EOS still attend normally; they are masked out of the loss, not the input,
    # so earlier positions' logits are unaffected either way (causal attention).
    attn = torch.cat([prompt_mask, torch.ones_like(completion_mask)], dim=1)
    position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)
    c = completion_ids.shape[1]
    logits = model(
        input_ids=input_ids, attention_mask=attn, position_ids=position_ids, logits_to_keep=c + 1
    ).logits  # (B, C+1, V)
    logits = logits[:, :-1, :] / temperature  # position t predicts completion token t
    logp, entropy = logprobs_and_entropy(logits, completion_ids, entropy_grad=entropy_grad)
    return logp if entropy is None else (logp, entropy)
