"""A CPU-side guard for device mistakes: no tensor of grpo_core's is created on an implicit device.

On a CPU-only machine every tensor lands on the CPU, so a ``torch.arange(n)`` in the update path works here and
fails on a GPU ("Expected all tensors to be on the same device") — or worse, silently runs on the CPU. This
guard makes that mistake visible without a GPU: while it is active, every call of a tensor factory
(``torch.tensor``, ``torch.arange``, ``torch.zeros``, …) made *from grpo_core's own code* without a ``device=``
is recorded with its file and line. Device tensors name the model's device; host tensors (rollouts, rewards,
advantages) name ``grpo_core.hardware.device.HOST``. Factories called by libraries (transformers, peft, torch's
optimizer) are not ours to fix and pass through; ``*_like`` factories and ``new_*`` methods follow their
argument's device and are always right.

It is a ``TorchFunctionMode``, the mechanism ``torch.set_default_device`` itself uses, so it sees exactly the
calls a default device would redirect.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

import grpo_core

ROOT = Path(grpo_core.__file__).resolve().parent
FACTORIES = {
    torch.tensor,
    torch.as_tensor,
    torch.arange,
    torch.zeros,
    torch.ones,
    torch.full,
    torch.empty,
    torch.rand,
    torch.randn,
    torch.randint,
    torch.randperm,
    torch.linspace,
    torch.eye,
}


class ImplicitDeviceGuard(TorchFunctionMode):
    """Records ``file:line: torch.<factory> without device=`` for each such call from grpo_core while active."""

    def __init__(self) -> None:
        super().__init__()
        self.violations: list[str] = []

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        # as_tensor of a tensor keeps that tensor's device: only a Python sequence would land on the default
        keeps = func is torch.as_tensor and args and isinstance(args[0], torch.Tensor)
        if func in FACTORIES and kwargs.get("device") is None and not keeps:
            caller = sys._getframe(1)
            path = Path(caller.f_code.co_filename).resolve()
            if path.is_relative_to(ROOT):
                where = f"{path.relative_to(ROOT.parent)}:{caller.f_lineno}"
                self.violations.append(f"{where}: torch.{func.__name__} without device=")
        return func(*args, **kwargs)
