"""The ``merged`` rollout engine: a sampling copy of the policy with the LoRA update folded into its weights.

Why a copy: sampling through the trainer's PEFT model runs every adapted layer as W·x + B·(A·x) — three matmuls
and their dispatch per layer per token — and in the trainer's fp32. This engine keeps a plain model whose
adapted weights are W + ΔW (peft's ``get_delta_weight``), stored in the sampling dtype (bf16 when
``precision="bf16"``: half the bytes to read per decoded token, and bf16 matmuls where the hardware has them),
and samples with grpo_core.rollout.engines.decode. ``sync`` rewrites only the adapted weights after each optimizer step
(one r-rank product per layer, in place); every other tensor (embeddings, norms) is shared with the trainer's
model when the dtypes agree, so the copy costs the adapted layers' weights once more (in fp32) or half of them
(bf16).

The sampler's log-probs differ from the trainer's by float rounding (fp32: ~1e-6; bf16: up to ~1e-1 on a
135M model), so every rollout carries ``sampling_logp`` and the loss applies the truncated importance-sampling
correction (``tis_cap``), exactly as for vLLM.

On a GPU the decode steps run on static buffers and are replayed as CUDA graphs, one per batch-size bucket,
captured once per engine (grpo_core.rollout.engines.graphs): a decode step there is launch-bound, and a replay is
one launch instead of a few hundred. ``sync`` writes the merged weights in place, so the graphs, which read the
weights where they are, sample the new policy without being captured again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, cast

import torch

from grpo_core.hardware.sharding import full
from grpo_core.rollout.batch import Rollout, eos_ids
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.decode import decode, decode_continuations
from grpo_core.rollout.engines.graphs import StaticDecoder, unsupported_reason

# How the merged engine runs its decode steps: "eager" (transformers' forward on a growing cache), "static" (fixed
# buffers, each step run eagerly: what tests check on a CPU), "graphs" (fixed buffers, each step a replayed CUDA
# graph), "auto" (graphs on CUDA for a model they support, eager elsewhere).
DecodeMode = Literal["auto", "eager", "static", "graphs"]


def _lora_layers(peft_model: Any) -> dict[str, Any]:
    """Module name (relative to the base model, as in a plain model's state dict) -> peft LoRA layer."""
    base = peft_model.get_base_model()
    return {
        name: module
        for name, module in base.named_modules()
        if hasattr(module, "get_delta_weight") and hasattr(module, "base_layer")
    }


def _set_module_tensor(root: torch.nn.Module, name: str, value: torch.Tensor, buffer: bool) -> None:
    owner_name, _, leaf = name.rpartition(".")
    owner = root.get_submodule(owner_name) if owner_name else root
    if buffer:
        owner.register_buffer(leaf, value, persistent=leaf in owner.state_dict())
    else:
        setattr(owner, leaf, torch.nn.Parameter(value, requires_grad=False))


def can_prepack(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether the merged engine can hold its bf16 adapted weights as ``PrepackedLinear``: oneDNN's prepacked bf16
    linear exists (CPU builds with mkldnn) and this CPU can run it: oneDNN's bf16 path
    needs AVX512 (BW, VL, DQ) or AVX-NE-CONVERT, and on an AVX2-only CPU its weight reorder raises (seen on an
    AVX2 EPYC); the plain bf16 linears work everywhere."""
    ops = torch.ops.mkldnn
    return (
        dtype == torch.bfloat16
        and device.type == "cpu"
        # torch leaves is_available unannotated; it takes nothing and returns a bool
        and cast("Callable[[], bool]", torch.backends.mkldnn.is_available)()
        and hasattr(ops, "_reorder_linear_weight")
        and hasattr(ops, "_linear_pointwise")
        and hasattr(ops, "_is_mkldnn_bf16_supported")
        and bool(ops._is_mkldnn_bf16_supported())
    )


class PrepackedLinear(torch.nn.Module):
    """A bf16 linear whose weight oneDNN has reordered once into its blocked layout.

    ``F.linear`` on a plain bf16 weight lets oneDNN reorder it on every call; decoding calls each weight once per
    token, so the reorder is paid once instead, with bit-identical outputs (bench.sampler times both:
    docs/benchmarks.md, "Sampling"). ``set_weight`` re-packs after each sync.
    """

    def __init__(self, bias: torch.Tensor | None, rows_hint: int) -> None:
        super().__init__()
        self.bias, self.rows_hint = bias, rows_hint
        self.packed: torch.Tensor | None = None

    def set_weight(self, weight: torch.Tensor) -> None:
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, self.rows_hint)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        return out


class MergedEngine:
    name = "merged"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        dtype: torch.dtype = torch.float32,
        *,
        prepack: bool = True,
        decode_mode: DecodeMode = "auto",
        reserve: tuple[int, int] | None = None,
    ) -> None:
        """A sampling copy of the PEFT ``model`` in ``dtype``; ``prepack``: hold the adapted bf16 linears prepacked
        where ``can_prepack`` says this machine runs them (False: plain bf16 linears, what bench/sampler.py and the
        tests compare them with); ``decode_mode``: how decode steps run (``DecodeMode``; "graphs" and "static" are
        refused with the reason for a model whose cache or attention they cannot hold); ``reserve``: (rows,
        positions) of the largest rollout to come (``reserve`` below)."""
        from transformers import AutoModelForCausalLM

        self.tokenizer = tokenizer
        self.dtype = dtype
        self.stop = eos_ids(model, tokenizer)
        base = model.get_base_model()
        self.layers = _lora_layers(model)
        with torch.device("meta"):  # the structure only: every tensor is assigned below, nothing is initialised
            auto: Any = AutoModelForCausalLM  # transformers' auto classes are untyped
            plain = auto.from_config(base.config, dtype=dtype)
        plain.generation_config = base.generation_config
        for name, param in base.named_parameters():
            if ".lora_" in name:
                continue
            target = name.replace(".base_layer.", ".")
            if target.rsplit(".", 1)[0] in self.layers and target.endswith(".weight"):
                value = torch.empty(param.shape, dtype=dtype, device=param.device)  # filled by sync()
            else:
                value = param.detach() if param.dtype == dtype else param.detach().to(dtype)
            _set_module_tensor(plain, target, value, buffer=False)
        for name, buf in base.named_buffers():
            _set_module_tensor(plain, name.replace(".base_layer.", "."), buf.clone(), buffer=True)
        if getattr(plain.config, "tie_word_embeddings", False):
            plain.tie_weights()
        self.prepacked = prepack and can_prepack(dtype, next(base.parameters()).device)
        if self.prepacked:
            for name, layer in self.layers.items():
                if not isinstance(layer.base_layer, torch.nn.Linear):  # e.g. a LoRA on the embedding
                    continue
                owner_name, _, leaf = name.rpartition(".")
                linear = plain.get_submodule(name)
                setattr(plain.get_submodule(owner_name), leaf, PrepackedLinear(linear.bias, rows_hint=8))
        leftover = [n for n, t in list(plain.named_parameters()) + list(plain.named_buffers()) if t.is_meta]
        if leftover:
            raise RuntimeError(f"merged sampler: tensors without a source in the policy: {leftover[:5]}")
        plain.eval()
        self.model = plain
        self.static = _static_decoder(plain, decode_mode)
        self.sync(model, 0)
        if reserve is not None:
            self.reserve(*reserve)

    def reserve(self, rows: int, positions: int) -> None:
        """Allocate the static decode buffers for rollouts of ``rows`` rows and ``positions`` positions (prompt plus
        completion), and on a GPU capture their graph, now, before the trainer sizes its micro-batches from the free
        memory, instead of at the first rollout; a no-op without static buffers (eager decoding allocates per
        rollout)."""
        if self.static is not None:
            self.static.prepare(rows, positions)

    @torch.no_grad()
    def sync(self, model: Any, step: int) -> None:
        """Adapted weights := W + ΔW of the policy's current adapter, in the sampling dtype, in place."""
        for name, layer in self.layers.items():
            module = self.model.get_submodule(name)
            packed = isinstance(module, PrepackedLinear)
            target = torch.empty_like(layer.base_layer.weight, dtype=self.dtype) if packed else module.weight
            # W, then += ΔW in fp32 arithmetic with one rounding to the sampling dtype (no fp32 copy of W)
            target.copy_(full(layer.base_layer.weight))
            target.add_(layer.get_delta_weight(layer.active_adapters[0]).float())
            if packed:
                module.set_weight(target)

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        return decode(self.model, self.tokenizer, prompts, sampling, stop_ids=self.stop, static=self.static)

    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        pad = self.tokenizer.pad_token_id
        pad_id = pad if pad is not None else self.stop[0]
        return decode_continuations(
            self.model, sequences, sampling, rows, stop_ids=self.stop, pad_id=pad_id, static=self.static
        )

    def suspend(self) -> None:
        """Nothing to free: the static buffers and graphs are kept for the whole job (captured once, and counted in
        the memory the trainer sizes its micro-batches from, ``reserve``)."""

    def close(self) -> None:
        self.model = None
        self.static = None  # its buffers and graphs


def _static_decoder(model: Any, mode: DecodeMode) -> StaticDecoder | None:
    """The static decoder ``mode`` asks for on ``model``'s device, or None for eager decoding."""
    if mode == "eager":
        return None
    on_cuda = next(model.parameters()).device.type == "cuda"
    if mode == "auto":
        if not on_cuda or unsupported_reason(model) is not None:
            return None
        mode = "graphs"
    return StaticDecoder(model, graphs=mode == "graphs")
