"""The LM head fused with the per-token log-prob: no (N, V) logits tensor outlives its chunk.

For the N loss tokens' hidden states h (N, H) and the head W (V, H), the log-prob of each sampled token y at
temperature T and, when asked, the entropy of π at that position are

    z = h Wᵀ / T,    log π(y) = z_y − logsumexp(z),    H(π) = logsumexp(z) − Σ_v softmax(z)_v z_v

(grpo_core.update.token_logprob.logprobs_and_entropy, the same arithmetic). The padded path asks the model for the
(B, C, V) logits of every completion position in the model's dtype and keeps them, with a gradient of the same
size, until the backward: at a 152k-token vocabulary 128 × 256 positions are 10 GB in bf16. Here the rows go
through the head ``CHUNK_ELEMENTS // V`` at a time (a chunk's work within grpo_core.hardware.memory's
``HEAD_BUDGET_BYTES``, which the memory plan sets aside), under activation checkpointing: the forward keeps only
each chunk's hidden states and its log-probs; the backward recomputes the chunk's logits, writes their gradient
(one (n, V) tensor), multiplies it into dh (and dW when the head trains: LoRA on ``lm_head``), and frees it before
the next chunk. Peak memory is then the budget, whatever N; the price is the head's forward once more (1/3 of the
head's FLOPs). Rows that fit in one chunk run in one plain pass, nothing recomputed. The head is called as a module,
so a LoRA-adapted head (peft, grpo_core.update.lora_fused) trains as it does in the padded path. Liger Kernel's
fused linear cross-entropy does this for a loss known in the forward; a GRPO loss needs the log-probs first, so the
gradient is computed in the backward, as prime-rl and verl do.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from grpo_core.hardware.memory import HEAD_BUDGET_BYTES, HEAD_BYTES_PER_LOGIT
from grpo_core.update.token_logprob import logprobs_and_entropy

CHUNK_ELEMENTS = HEAD_BUDGET_BYTES // HEAD_BYTES_PER_LOGIT  # logits per chunk: 441 rows at a 152k vocabulary


def vocab_size(head: Any) -> int:
    """Rows of the head's weight (peft's LoRA wrapper keeps the base layer's)."""
    base = getattr(head, "base_layer", head)
    return int(base.weight.shape[0])


def _chunk(
    hidden: Tensor, targets: Tensor, head: Any, temperature: float, entropy_grad: bool | None
) -> tuple[Tensor, Tensor | None]:
    logits = head(hidden)  # (n, V) in the compute dtype
    if temperature != 1.0:
        logits = logits / temperature
    logp, entropy = logprobs_and_entropy(logits.unsqueeze(0), targets.unsqueeze(0), entropy_grad=entropy_grad)
    return logp[0], None if entropy is None else entropy[0]


def head_logprobs(
    hidden: Tensor,  # (N, H) the hidden states that predict the loss tokens
    head: Any,  # the model's output embedding (nn.Linear, or a LoRA-adapted one)
    targets: Tensor,  # (N,) the loss tokens
    *,
    temperature: float,
    entropy_grad: bool | None = None,
    chunk_rows: int | None = None,
) -> tuple[Tensor, Tensor | None]:
    """(N,) float32 log-probs of ``targets`` and, unless ``entropy_grad`` is None, (N,) entropies (with gradient
    when True). ``chunk_rows``: rows per chunk (default ``CHUNK_ELEMENTS // V``); 0 = unfused: the (N, V) logits
    all kept for the backward, as a plain head keeps them (bench.update_ab's "packed"), in chunks only so that the
    log-softmax's fp32 temporaries stay a chunk's."""
    n, vocab = hidden.shape[0], vocab_size(head)
    fused = chunk_rows != 0
    rows = chunk_rows or max(1, CHUNK_ELEMENTS // vocab)
    if n <= rows:
        return _chunk(hidden, targets, head, temperature, entropy_grad)
    # unfused: every chunk's logits stay for the backward (the (N, V) of a plain head), their fp32 work a chunk's
    recompute = fused and torch.is_grad_enabled()
    recompute = recompute and (hidden.requires_grad or any(p.requires_grad for p in head.parameters()))
    logps: list[Tensor] = []
    entropies: list[Tensor] = []
    for lo in range(0, n, rows):
        args = (hidden[lo : lo + rows], targets[lo : lo + rows], head, temperature, entropy_grad)
        # the head draws no random numbers: no generator state to stash (a CUDA graph capture could not read it)
        logp, entropy = (
            checkpoint(_chunk, *args, use_reentrant=False, preserve_rng_state=False) if recompute else _chunk(*args)
        )
        logps.append(logp)
        if entropy is not None:
            entropies.append(entropy)
    return torch.cat(logps), torch.cat(entropies) if entropies else None
