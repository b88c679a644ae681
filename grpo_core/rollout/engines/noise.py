"""Counter-based uniforms: the random number of (seed, row, token) computed from those three integers alone.

A ``torch.Generator`` hands out numbers in call order, so with one generator for a batch the draw of row i at token
t depends on how many rows the batch has: the same prompt sampled in a batch of 8 and in a batch of 4 (one rank's
share of a data-parallel step) would get different completions. Hashing (seed, global row, token) instead makes a
rollout a function of (weights, prompt, seed, the row's position in the step), whatever batch or rank draws it:
world size 1 and world size N sample the same completions (grpo_core.hardware.distributed).

The hash is Wellons' ``lowbias32`` integer finaliser applied in a chain (seed, then row, then token), on int64
tensors that hold unsigned 32-bit values (a product of two such values wraps past 2^63, but its low 32 bits, the
only ones kept, are exact in two's complement). Two finalised words give a 53-bit double in [0, 1). It runs on the
logits' device, one elementwise pass over (B,) per token.
"""

from __future__ import annotations

import torch
from torch import Tensor

_M32 = 0xFFFFFFFF


def _mix32(x: Tensor) -> Tensor:
    """lowbias32 (C. Wellons, "Prospecting for hash functions", 2018): a bijection on 32-bit integers."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def row_uniforms(seed: int | Tensor, rows: Tensor, token: int) -> Tensor:
    """(B, 1) float64 uniforms in [0, 1) for global row numbers ``rows`` (B,) int64 at token index ``token``;
    ``seed`` one for all rows or (B,) int64, one per row."""
    seeds = seed if isinstance(seed, Tensor) else torch.full_like(rows, seed & _M32)
    key = _mix32(_mix32(seeds & _M32) ^ (rows & _M32))
    key = _mix32(key ^ (token & _M32))
    hi = _mix32(key ^ 0x9E3779B9) >> 5  # 27 bits
    lo = _mix32(key ^ 0x85EBCA6B) >> 6  # 26 bits
    return ((hi * 67108864 + lo).double() / 9007199254740992.0).unsqueeze(1)  # (hi·2^26 + lo) / 2^53
