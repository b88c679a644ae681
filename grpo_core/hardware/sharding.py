"""FSDP2 for a job on several ranks (``sharding: fsdp``): the frozen base weights of the training copy are sharded
over the ranks with ``fully_shard``, instead of every rank holding them whole.

What is sharded, and why only that: with LoRA, the base weights are nearly all of the training copy's memory;
the adapter, its gradients and its optimizer state are a few MB. So each decoder layer is one FSDP unit whose
frozen weights are all-gathered for its forward and backward and freed after, while the adapter's parameters are
``ignored_params``: they stay whole on every rank, their gradients are summed in fp64 and all-reduced exactly as
in the replicated layout (grpo_core.hardware.distributed), the optimizer and the checkpoints are the replicated
layout's, and the maths is the replicated layout's (the roundings differ only because prompts are not shared, below).
Frozen weights have no gradients, so FSDP issues no
reduce-scatter: the only collectives of a unit are its all-gathers, in forward and in backward order. (Letting
FSDP reduce the adapter's gradients too was tried first: its reduce-scatter rounds each backward's sum to fp32,
2.3e-6 in the weights after 3 steps, and accumulating across micro-batches in fp64 instead fails in torch 2.13
with "attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype 'Float'".)

What the rest of the loop does for it:

- *Matched collectives*: every rank must run the same number of forward and backward passes through every unit,
  so the update pads a rank's micro-batches with zero-weight passes (``grpo_core.update.step``) and does not share
  prompt prefixes (that adds a forward whose count depends on the data).
- *Sampling*: the merged engine is built from the whole weights before sharding and re-merges the adapted layers
  after each step from gathered base weights (``full``); the transformers engine (generate through the sharded
  model, ranks stopping at different lengths) and vLLM (its own whole copy) are refused with fsdp
  (grpo_core.schemas.config).

Memory, per rank: the sampler's copy of the weights stays whole (it samples without collectives); the training
copy's base weights are 1/N each, plus one layer all-gathered at a time.
"""

from __future__ import annotations

from typing import Any

import torch

from grpo_core.hardware.distributed import World
from grpo_core.schemas.config import GRPOConfig


def sharded(cfg: GRPOConfig, world: World) -> bool:
    """The run shards its training copy: ``sharding: fsdp`` with more than one rank."""
    return cfg.sharding == "fsdp" and world.distributed


def decoder_layers(model: Any) -> list[torch.nn.Module]:
    """The model's repeated blocks: the largest ``ModuleList`` (``model.layers`` in every catalog architecture)."""
    lists: list[torch.nn.ModuleList] = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) > 0]
    if not lists:
        raise ValueError("sharding 'fsdp': the model has no list of decoder layers to shard")
    longest = max(range(len(lists)), key=lambda i: len(lists[i]))
    return list(lists[longest])


def shard(model: Any, world: World, device: torch.device) -> None:
    """``fully_shard`` each decoder layer, then the rest of the model, over all ranks (one mesh dimension), the
    adapter's parameters left out (``ignored_params``)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (world.size,))
    adapter = {p for p in model.parameters() if p.requires_grad}
    units = []
    for layer in decoder_layers(model):
        units.append(fully_shard(layer, mesh=mesh, ignored_params=adapter))
    units.append(fully_shard(model, mesh=mesh, ignored_params=adapter))
    for unit in units:
        # no implicit backward prefetch: its target follows the forward-order record, which a rank's data can
        # change; a unit that "prefetches" itself (already gathered: a no-op) turns the implicit choice off
        unit.set_modules_to_backward_prefetch([unit])


def full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a sharded DTensor (a collective: every rank must call it, in the same order), else
    ``t`` itself."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t
