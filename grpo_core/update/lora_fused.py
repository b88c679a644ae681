"""One autograd node per LoRA linear layer instead of peft's chain of small ops.

Why: on a small model the update is bound by per-op overhead, not FLOPs (bench.update_ab: docs/benchmarks.md,
"What each optimization buys"). peft's LoRA layer runs, per call, the base linear, a cast of the input to the
adapter's dtype, dropout, A, B, a scaling multiply, an add and a cast back — each a dispatch, an autograd node
and, under autocast, a weight and activation cast — in the forward and again in the backward. ``LoRALinearFn``
computes the same

    y = x Wᵀ (+ bias) + s · (x Aᵀ) Bᵀ

with three matmuls in the compute dtype and writes the three gradients by hand:

    dx = dy W + s · (dy B) A,    dB = s · dyᵀ (x Aᵀ),    dA = s · (dy B)ᵀ x

(W frozen: no gradient). The compute dtype is the autocast dtype when autocast is on (bf16 here), else the
weights' own dtype; the adapter's fp32 master weights receive fp32 gradients, as with autocast. Layers with
dropout > 0 in training mode, DoRA or other variants, several active adapters, or a non-Linear base keep peft's
forward, as do merged weights; a disabled adapter (the reference pass) calls the base layer directly.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor


class LoRALinearFn(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        lora_a: Tensor,
        lora_b: Tensor,
        scaling: float,
        dtype: torch.dtype,
    ) -> Tensor:
        xc, w = x.to(dtype), weight.to(dtype)
        a, b = lora_a.to(dtype), lora_b.to(dtype)
        u = F.linear(xc, a)  # (..., r)
        out = F.linear(xc, w, None if bias is None else bias.to(dtype))
        out = out + F.linear(u, b) * scaling
        ctx.save_for_backward(xc, u, w, a, b)
        ctx.scaling, ctx.x_dtype = scaling, x.dtype
        ctx.param_dtypes = (lora_a.dtype, lora_b.dtype)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        xc, u, w, a, b = ctx.saved_tensors
        s = ctx.scaling
        g = grad_out.to(w.dtype)
        gu = g @ b  # (..., r): the gradient reaching x Aᵀ, before the scaling
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = (g @ w + (gu @ a) * s).to(ctx.x_dtype)
        g2, u2, x2 = g.reshape(-1, g.shape[-1]), u.reshape(-1, u.shape[-1]), xc.reshape(-1, xc.shape[-1])
        grad_b = (g2.t() @ u2).mul_(s).to(ctx.param_dtypes[1]) if ctx.needs_input_grad[4] else None
        grad_a = (gu.reshape(-1, gu.shape[-1]).t() @ x2).mul_(s).to(ctx.param_dtypes[0])
        grad_a = grad_a if ctx.needs_input_grad[3] else None
        return grad_x, None, None, grad_a, grad_b, None, None


# torch.autograd.Function.apply is untyped; this is its signature for LoRALinearFn
_lora_linear: Callable[..., Tensor] = LoRALinearFn.apply


def _fusable(module: Any) -> bool:
    """A vanilla peft LoRA Linear with one adapter, no variant (DoRA…), a frozen nn.Linear base."""
    base = getattr(module, "base_layer", None)
    if not isinstance(base, torch.nn.Linear) or base.weight.requires_grad:
        return False
    if not hasattr(module, "lora_A") or len(module.lora_A) != 1 or getattr(module, "lora_variant", {}):
        return False
    if getattr(module, "fan_in_fan_out", False):
        return False
    name = next(iter(module.lora_A))
    bias = getattr(module, "lora_bias", {}).get(name, False)
    return not bias and module.lora_B[name].bias is None and module.lora_A[name].bias is None


def _fused_forward(self: Any, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    if args or kwargs or self.merged:  # anything unusual: peft's own path
        return cast(Tensor, self._peft_forward(x, *args, **kwargs))
    if self.disable_adapters:  # the reference pass: the base layer alone, without peft's per-call checks
        return cast(Tensor, self.base_layer(x))
    name = self.active_adapters[0] if len(self.active_adapters) == 1 else None
    dropout = self.lora_dropout[name] if name in self.lora_dropout else None  # noqa: SIM401 (ModuleDict: no .get)
    if name not in self.lora_A or (
        dropout is not None and not isinstance(dropout, torch.nn.Identity) and dropout.training
    ):
        return cast(Tensor, self._peft_forward(x, *args, **kwargs))
    device = x.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else self.base_layer.weight.dtype
    with torch.autocast(device, enabled=False):  # the casts are explicit inside the function
        return _lora_linear(
            x,
            self.base_layer.weight,
            self.base_layer.bias,
            self.lora_A[name].weight,
            self.lora_B[name].weight,
            float(self.scaling[name]),
            dtype,
        )


def fuse_lora(model: torch.nn.Module) -> int:
    """Route every fusable LoRA layer of a peft model through ``LoRALinearFn``; the number of layers fused."""
    n = 0
    for module in model.modules():
        if _fusable(module) and not hasattr(module, "_peft_forward"):
            wrapped: Any = module  # a peft LoraLayer: its forward is replaced, the original kept for the rare paths
            wrapped._peft_forward = module.forward
            wrapped.forward = types.MethodType(_fused_forward, module)
            n += 1
    return n
