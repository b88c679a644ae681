"""Reward shaping that depends on the rollout rather than on a grader.

Soft overlong punishment (DAPO, Yu et al., 2025, eq. 13), with L_max = max_completion_tokens and buffer C:
    R_len(|y|) = 0                          if |y| ≤ L_max − C
               = ((L_max − C) − |y|) / C    if L_max − C < |y| ≤ L_max
               = −1                         otherwise (cannot happen here: sampling stops at L_max)
It is added to the grader reward (scaled by ``overlong_penalty``) before advantages are computed.
"""

from __future__ import annotations

import torch
from torch import Tensor


def soft_overlong_penalty(lengths: Tensor, max_len: int, buffer: int) -> Tensor:
    """R_len per completion for ``lengths`` (B,) in tokens; float32, in [−1, 0]."""
    if not 0 < buffer <= max_len:
        raise ValueError(f"buffer must be in (0, {max_len}], got {buffer}")
    free = max_len - buffer
    over = (free - lengths.float()) / buffer
    return torch.where(lengths <= free, torch.zeros_like(over), over.clamp(min=-1.0))
