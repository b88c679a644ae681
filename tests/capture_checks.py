"""What a CUDA graph capture refuses, found on a CPU: the checker the captured code paths' tests share (the merged
sampler's decode step, tests/unit/test_static_decode.py; the update's passes, tests/unit/test_captured_update.py)."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class CaptureRefusals(TorchDispatchMode):
    """Records every op a capture refuses or would record wrongly: a read of a device value on the host (an
    ``.item()``, ``bool(tensor)``, a data-dependent shape), a tensor made from Python data, a copy between devices
    (a capture would record the host address), and a host tensor read by an op on another device. On a CPU run the
    reads and the tensors from Python data show; with the model on ``meta`` (the device) and the host on the CPU,
    the copies and mixed ops show too."""

    READS = ("_local_scalar_dense", "nonzero", "is_nonzero", "equal", "masked_select", "unique", "_unique2", "item")

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.ops = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.ops += 1
        name = func._schema.name.split("::")[-1]
        tensors = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        devices = {t.device.type for t in tensors}
        if name in self.READS or name == "lift_fresh":
            self.found.append(name)
        elif name == "_to_copy" and (kwargs.get("device") or args[0].device).type != args[0].device.type:
            self.found.append("_to_copy across devices")
        elif name == "copy_" and args[0].device.type != args[1].device.type:
            self.found.append("copy_ across devices")
        elif len(devices) > 1:
            self.found.append(f"{name} reads a tensor of another device")
        return func(*args, **kwargs)
