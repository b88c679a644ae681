"""One autograd node per LoRA linear layer instead of peft's chain of small ops.

Why: an update this size is bound by per-op overhead, not FLOPs (bench.update_counts, bench.update_ab:
docs/benchmarks.md). peft's LoRA layer runs, per call, the base linear, a cast of the input to the adapter's dtype,
dropout, A, B, a scaling multiply, an add and a cast back — each a dispatch, an autograd node and, under autocast,
a weight and activation cast — in the forward and again in the backward. ``LoRALinearFn`` computes the same

    y = x Wᵀ (+ bias) + (x Aᵀ) (s·B)ᵀ

in three kernels (two matmuls and one ``addmm_``) and writes the gradients by hand:

    dx = dy W + (dy s·B) A,    dA = (dy s·B)ᵀ x,    dB = s · dyᵀ (x Aᵀ)

(W frozen: no gradient). The compute dtype is the autocast dtype when autocast is on (bf16 here), else the
weights' own dtype. A and s·B are cast to it once per weight version (``_compute_weights``: the optimizer's
in-place step bumps a parameter's version), not on every call; the adapter's fp32 master weights receive fp32
gradients, as with autocast. Layers with dropout > 0 in training mode, DoRA or other variants, several active
adapters, or a non-Linear base keep peft's forward, as do merged weights.

The reference pass (β > 0: the base model's log-probs) turns every fused layer off with one flag
(``reference_pass``), where peft's ``disable_adapter()`` walks every module of the model (2,000 at 0.5B, about
half of an update's Python calls) on entry and on exit.
"""

from __future__ import annotations

import contextlib
import itertools
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
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
        lora_a: Tensor,  # the fp32 parameters: their gradients are this function's to give
        lora_b: Tensor,
        a: Tensor,  # A and s·B in the compute dtype (``_compute_weights``)
        b_scaled: Tensor,
        scaling: float,
    ) -> Tensor:
        dtype = a.dtype
        shape = x.shape
        x2 = x.to(dtype).reshape(-1, shape[-1])
        w = weight.to(dtype)
        u = x2 @ a.t()  # (N, r)
        out = F.linear(x2, w, None if bias is None else bias.to(dtype))
        out.addmm_(u, b_scaled.t())
        ctx.save_for_backward(x2, u, w, a, b_scaled)
        ctx.scaling, ctx.x_dtype, ctx.x_shape = scaling, x.dtype, shape
        ctx.param_dtypes = (lora_a.dtype, lora_b.dtype)
        return out.view(*shape[:-1], out.shape[-1])

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        x2, u, w, a, b_scaled = ctx.saved_tensors
        g = grad_out.reshape(-1, grad_out.shape[-1]).to(w.dtype)
        gu = g @ b_scaled  # (N, r): s · dy B, the gradient reaching x Aᵀ
        grad_x = grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = (g @ w).addmm_(gu, a).to(ctx.x_dtype).view(ctx.x_shape)
        if ctx.needs_input_grad[3]:
            grad_a = (gu.t() @ x2).to(ctx.param_dtypes[0])
        if ctx.needs_input_grad[4]:
            grad_b = (g.t() @ u).to(ctx.param_dtypes[1]).mul_(ctx.scaling)
        return grad_x, None, None, grad_a, grad_b, None, None, None


# torch.autograd.Function.apply is untyped; this is its signature for LoRALinearFn
_lora_linear: Callable[..., Tensor] = LoRALinearFn.apply


@dataclass
class LoRASwitch:
    """Shared by the fused layers of one model: ``off`` runs them as their base layers (``reference_pass``).
    ``complete``: every LoRA layer of the model is fused, so the flag alone disables the adapter. ``rows``: each
    adapter's span of the batch's rows (``row_adapters``), None outside it."""

    off: bool = False
    complete: bool = False
    layers: list[Any] = field(default_factory=list)
    rows: list[tuple[int, int]] | None = None  # each adapter's span of the batch's rows
    tokens: bool = False  # a packed sequence's tokens through several adapters (``token_adapters``)


_SWITCH = "_grpo_lora_switch"


def _capturing(t: Tensor) -> bool:
    """Whether a CUDA graph is being captured on ``t``'s device's current stream."""
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def _compute_weights(module: Any, name: str, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """(A, s·B) of adapter ``name`` in ``dtype``, cast once per version of the parameters and kept on the layer."""
    a, b = module.lora_A[name].weight, module.lora_B[name].weight
    if _capturing(a):  # a graph casts on every replay: a cache would replay the capture's weights
        with torch.no_grad():
            return a.detach().to(dtype), (b.detach() * float(module.scaling[name])).to(dtype)
    key = (a._version, b._version, a.data_ptr(), b.data_ptr(), dtype)
    cached = getattr(module, "_grpo_cast", None)
    if cached is None or cached[0] != key:
        with torch.no_grad():
            cached = (key, a.detach().to(dtype), (b.detach() * float(module.scaling[name])).to(dtype))
        module._grpo_cast = cached
    return cached[1], cached[2]


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
    if getattr(self, _SWITCH).off:  # the reference pass (never merged: reference_pass checks): the base layer alone
        return cast(Tensor, self.base_layer(x, *args, **kwargs))
    if getattr(self, _SWITCH).tokens:  # several adapters, by token, with gradients (token_adapters)
        return _token_forward(self, x)
    if getattr(self, _SWITCH).rows is not None:  # several adapters, one per row (row_adapters)
        return _row_forward(self, x)
    if args or kwargs or self.merged:  # anything unusual: peft's own path
        return cast(Tensor, self._peft_forward(x, *args, **kwargs))
    if self.disable_adapters:  # peft's disable_adapter(): the base layer alone, without its per-call checks
        return cast(Tensor, self.base_layer(x))
    name = self.active_adapters[0] if len(self.active_adapters) == 1 else None
    dropout = self.lora_dropout[name] if name in self.lora_dropout else None  # noqa: SIM401 (ModuleDict: no .get)
    if (
        name is None
        or name not in self.lora_A
        or (dropout is not None and not isinstance(dropout, torch.nn.Identity) and dropout.training)
    ):
        return cast(Tensor, self._peft_forward(x, *args, **kwargs))
    device = x.device.type
    autocast = device in ("cpu", "cuda") and torch.is_autocast_enabled(device)
    dtype = torch.get_autocast_dtype(device) if autocast else self.base_layer.weight.dtype
    a, b_scaled = _compute_weights(self, name, dtype)
    with torch.autocast(device, enabled=False) if autocast else contextlib.nullcontext():  # casts are explicit
        return _lora_linear(
            x, self.base_layer.weight, self.base_layer.bias, self.lora_A[name].weight, self.lora_B[name].weight,
            a, b_scaled, float(self.scaling[name]),
        )  # fmt: skip


_ROWS = "_grpo_row_weights"  # a fused layer's stacked (A, s·B) of every adapter, while row_adapters holds


def _row_forward(self: Any, x: Tensor) -> Tensor:
    """y = x Wᵀ (+ bias) + (x A_kᵀ) (s·B_k)ᵀ with k the row's adapter (no gradient: sampling only). The spans count
    rows of the batch, or units of several rows each (a batch of ``f`` times their total rows: every span ``f``
    times as long, as when a sampler prefills each prompt once and decodes G rows of it). Spans of one length run
    as two batched matmuls for every adapter at once; others as two small matmuls per span."""
    spans: list[tuple[int, int]] = getattr(self, _SWITCH).rows
    a, b_scaled = getattr(self, _ROWS)  # (n, r, in), (n, out, r) in the base weight's dtype
    total = spans[-1][1]
    if x.dim() != 3 or not total or x.shape[0] % total:
        raise ValueError(
            f"row adapters need (rows, tokens, features) inputs of a multiple of {total} rows, not {x.shape}"
        )
    f = x.shape[0] // total
    x = x.to(a.dtype)
    out = cast(Tensor, self.base_layer(x))
    widths = {end - start for start, end in spans}
    if len(widths) == 1:  # every adapter as many rows: (n, rows·tokens, in) through (n, in, r) and (n, r, out)
        u = torch.bmm(x.reshape(len(spans), -1, x.shape[-1]), a.transpose(1, 2))
        out += torch.bmm(u, b_scaled.transpose(1, 2)).view(out.shape)
        return out
    for k, (start, end) in enumerate(spans):
        if end > start:
            out[start * f : end * f] += (x[start * f : end * f] @ a[k].t()) @ b_scaled[k].t()
    return out


@contextlib.contextmanager
def row_adapters(
    model: Any, adapters: Sequence[Sequence[Tensor]], slot: Sequence[Tensor], counts: Sequence[int]
) -> Iterator[None]:
    """Inside, the forward of ``model`` (the peft model ``fuse_lora`` fused) runs its batch's rows through several
    adapters: the first ``counts[0]`` rows through adapter 0, the next ``counts[1]`` through adapter 1, and so on
    (or, for a batch of ``f`` times ``sum(counts)`` rows, the first ``f·counts[0]`` rows: a sampler's prefill of each
    prompt once, then its G rows, grpo_core.rollout.engines.decode.decode_together).
    ``adapters[k]`` holds adapter k's values in the order of ``slot`` (the model's LoRA parameters, each layer's A
    and B among them; the slot's own values are not read). Several training runs that share one resident base
    (grpo_core.training_api.shared) sample in one decode this way. Every LoRA layer must be fused (``fuse_lora``),
    none merged, and the inputs (rows, tokens, features): the caller decodes one row per sequence, its rows grouped
    by adapter.

    Rounding: a row computes W x + (x A_k)(s B_k) in the base weight's dtype, where a sampler of its own adapter
    computes (W + s B_k A_k) x with the product merged into W, and the batch's shape can change a matmul's
    blocking; the two agree to a few units in the last place of the logits, not bit for bit."""
    switch = _switch_alone(model)
    if switch is None:
        raise ValueError(rows_problem(model))
    if len(counts) != len(adapters):
        raise ValueError(f"{len(counts)} row counts for {len(adapters)} adapters")
    ends = list(itertools.accumulate(counts))
    where = {id(p): i for i, p in enumerate(slot)}
    try:
        with torch.no_grad():
            for layer in switch.layers:
                name = next(iter(layer.lora_A))
                ia, ib = where[id(layer.lora_A[name].weight)], where[id(layer.lora_B[name].weight)]
                dtype, scale = layer.base_layer.weight.dtype, float(layer.scaling[name])
                a = torch.stack([values[ia] for values in adapters]).to(dtype)
                b = (torch.stack([values[ib] for values in adapters]) * scale).to(dtype)
                setattr(layer, _ROWS, (a, b))
        switch.rows = list(zip([0, *ends[:-1]], ends, strict=True))
        yield
    finally:
        switch.rows = None
        for layer in switch.layers:
            if hasattr(layer, _ROWS):
                delattr(layer, _ROWS)


_TOKENS = "_grpo_token_weights"  # a fused layer's every adapter's (A, B) as leaves, while token_adapters holds


def _token_forward(self: Any, x: Tensor) -> Tensor:
    """y = x Wᵀ + ((x Aᵀ) ⊙ M) (s·B)ᵀ, A and B every adapter's stacked ((n·r, in), (out, n·r)) and M (T, n·r) one on
    the r columns of the token's own adapter: two matmuls whatever the number of adapters, and since M zeroes the
    other adapters' columns, each token's output and each adapter's gradient are its own. In the compute dtype
    (autocast's, else the base weight's), the fp32 leaves cast as ``LoRALinearFn``'s are."""
    a, b, mask, casts, scale = getattr(self, _TOKENS)
    if x.dim() != 3 or x.shape[0] != 1 or x.shape[1] != mask.shape[1]:
        raise ValueError(f"token adapters need one packed sequence of {mask.shape[1]} tokens, not {tuple(x.shape)}")
    device = x.device.type
    autocast = device in ("cpu", "cuda") and torch.is_autocast_enabled(device)
    dtype = torch.get_autocast_dtype(device) if autocast else self.base_layer.weight.dtype
    bias = self.base_layer.bias
    with torch.autocast(device, enabled=False) if autocast else contextlib.nullcontext():
        x = x.to(dtype)
        out = F.linear(x, self.base_layer.weight.to(dtype), None if bias is None else bias.to(dtype))
        if dtype not in casts:  # once per pass and dtype, for every layer of this rank
            casts[dtype] = mask.to(dtype)
        u = (x @ a.to(dtype).t()) * casts[dtype]
        y: Tensor = out + (u @ b.to(dtype).t()) * scale
        return y


@dataclass
class TokenAdapters:
    """What ``token_adapters`` yields: every fused layer's stacked leaves, and after a backward each adapter's
    gradients (``grads``)."""

    leaves: list[tuple[int, int, Tensor, Tensor, int]]  # (slot index of A, of B, A leaf, B leaf, rank)
    size: int  # the slot's length

    def grads(self, k: int) -> list[Tensor | None]:
        """Adapter ``k``'s gradients in slot order (views of the leaves' gradients)."""
        out: list[Tensor | None] = [None] * self.size
        for ia, ib, a, b, r in self.leaves:
            out[ia] = None if a.grad is None else a.grad[k * r : (k + 1) * r]
            out[ib] = None if b.grad is None else b.grad[:, k * r : (k + 1) * r]
        return out


@contextlib.contextmanager
def token_adapters(
    model: Any, adapters: Sequence[Sequence[Tensor]], slot: Sequence[Tensor], counts: Sequence[int]
) -> Iterator[TokenAdapters]:
    """Inside, a forward of ``model`` on one packed sequence (grpo_core.update.packing) and its backward run its
    tokens through several adapters, the first ``counts[0]`` tokens through adapter 0, the next ``counts[1]`` through
    adapter 1, and so on, each adapter's values (``adapters[k]``, in slot order, as ``row_adapters`` takes them)
    copied into leaves whose gradients the yielded ``TokenAdapters`` hands out: several pool tenants' micro-batches
    in one forward/backward (grpo_core.update.together). The values themselves are not touched.

    Rounding: the adapter runs beside W in two matmuls over every adapter's rank, where an adapter alone runs in
    ``LoRALinearFn``; the two agree within rounding, not bit for bit."""
    switch = _switch_alone(model)
    if switch is None:
        raise ValueError(rows_problem(model))
    if len(counts) != len(adapters):
        raise ValueError(f"{len(counts)} token counts for {len(adapters)} adapters")
    where = {id(p): i for i, p in enumerate(slot)}
    device = slot[0].device
    repeats = torch.tensor(counts, device=device)  # output_size: no wait for the device to count the tokens
    owner = torch.repeat_interleave(torch.arange(len(counts), device=device), repeats, output_size=sum(counts))
    masks: dict[int, tuple[Tensor, dict[torch.dtype, Tensor]]] = {}  # rank -> the mask, and its casts
    leaves = []
    try:
        for layer in switch.layers:
            name = next(iter(layer.lora_A))
            ia, ib = where[id(layer.lora_A[name].weight)], where[id(layer.lora_B[name].weight)]
            a = torch.cat([values[ia] for values in adapters]).detach().requires_grad_()
            b = torch.cat([values[ib] for values in adapters], dim=1).detach().requires_grad_()
            r = a.shape[0] // len(adapters)
            if r not in masks:  # (1, T, n·r): token t's own adapter's r columns
                masks[r] = ((owner.unsqueeze(1) == torch.arange(a.shape[0], device=device) // r).unsqueeze(0), {})
            setattr(layer, _TOKENS, (a, b, *masks[r], float(layer.scaling[name])))
            leaves.append((ia, ib, a, b, r))
        switch.tokens = True
        yield TokenAdapters(leaves, len(slot))
    finally:
        switch.tokens = False
        for layer in switch.layers:
            if hasattr(layer, _TOKENS):
                delattr(layer, _TOKENS)


@contextlib.contextmanager
def reference_pass(model: Any) -> Iterator[None]:
    """The base model inside: every fused layer off by one flag when all of the model's LoRA layers are fused and
    none is merged, else peft's ``disable_adapter()``."""
    switch = _switch_alone(model)
    if switch is None:
        with model.disable_adapter():
            yield
        return
    switch.off = True
    try:
        yield
    finally:
        switch.off = False


def reference_on(model: Any) -> bool:
    """Whether the fused layers run as their base layers now (``reference_pass``'s flag)."""
    switch: LoRASwitch | None = getattr(model, _SWITCH, None)
    return switch is not None and switch.off


def _switch_alone(model: Any) -> LoRASwitch | None:
    """The model's switch when its flag alone turns the adapter off: every LoRA layer fused, none merged."""
    switch: LoRASwitch | None = getattr(model, _SWITCH, None)
    if switch is None or not switch.complete or any(m.merged for m in switch.layers):
        return None
    return switch


def rows_problem(model: Any) -> str | None:
    """Why ``row_adapters`` cannot run ``model`` (the peft model ``fuse_lora`` fused), or None."""
    return None if _switch_alone(model) is not None else "row adapters need every LoRA layer fused and none merged"


def capture_problem(model: Any) -> str | None:
    """Why a CUDA graph of ``model``'s forward could replay the wrong adapter state, or None: a graph records one
    state of the fused layers' flag (``reference_on``: part of its key), nothing of peft's own switches."""
    from peft.tuners.lora import LoraLayer

    if _switch_alone(model) is not None or not any(isinstance(m, LoraLayer) for m in model.modules()):
        return None
    switch: LoRASwitch | None = getattr(model, _SWITCH, None)
    if switch is None or not switch.complete:
        return "not every LoRA layer is fused (peft's own forward switches adapters by Python state)"
    return "the adapter is merged into the weights"


def fuse_lora(model: torch.nn.Module) -> int:
    """Route every fusable LoRA layer of a peft model through ``LoRALinearFn``; the number of layers fused."""
    from peft.tuners.lora import LoraLayer

    switch: LoRASwitch = getattr(model, _SWITCH, None) or LoRASwitch()
    n = 0
    for module in model.modules():
        if _fusable(module) and not hasattr(module, "_peft_forward"):
            wrapped: Any = module  # a peft LoraLayer: its forward is replaced, the original kept for the rare paths
            wrapped._peft_forward = module.forward
            wrapped.forward = types.MethodType(_fused_forward, module)
            setattr(wrapped, _SWITCH, switch)
            switch.layers.append(wrapped)
            n += 1
    switch.complete = all(hasattr(m, "_peft_forward") for m in model.modules() if isinstance(m, LoraLayer))
    object.__setattr__(model, _SWITCH, switch)  # not a submodule: a plain attribute
    return n
