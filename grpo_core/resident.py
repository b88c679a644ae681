"""The base model resident once for several tenants (grpo_core.pool): one adapter slot, the tokenizer, the engine.

Every tenant of a pool trains an adapter of the same shape on the same base weights, so the policy is loaded once
(``grpo_core.policy.load_policy``, for the first tenant) and its LoRA parameters are a *slot*: the Parameter
objects every tenant's optimizer holds, filled with the tenant's values while its turn runs (``activate``) and
read back when another tenant takes the slot (``save``). Copying values in and out of the same tensors, instead
of one PEFT adapter per tenant, keeps everything that holds those tensors valid across tenants: the fused LoRA layers
(grpo_core.update.lora_fused, whose casts are keyed by the tensors' versions), captured graphs (keyed by their
addresses), the optimizers. A turn computes with exactly the values the tenant computes with alone, so the pool
changes no number (tests/unit/test_pool.py holds adapters bit-identical to runs alone).

A new tenant's adapter starts as its run alone would start it: ``fresh`` seeds torch with the tenant's seed and
lets PEFT create an adapter of the same config (the same layers, in the same order, drawing the same numbers as
``get_peft_model`` did), copies it into the slot and deletes it. The merged rollout engine is shared too: it holds
W + ΔW of whatever adapter it last synced, and ``activate`` syncs it to the tenant's (a pure function of the slot's
values: ``MergedEngine.sync`` rebuilds every adapted weight from W).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from grpo_core.checkpoint import rng_state, set_rng_state
from grpo_core.rollout.engines.base import RolloutEngine

_FRESH = "grpo-pool-fresh"  # the name of the adapter ``fresh`` creates for a moment


@dataclass
class Snapshot:
    """A tenant's values while another's turn runs: its adapter and its RNG states."""

    adapter: list[Tensor]
    rng: dict[str, Any]


@dataclass
class Resident:
    """The pool's policy (a PEFT model with one adapter, "default"), tokenizer and rollout engine; None until the
    first tenant loads them (grpo_core.run.build_run)."""

    model: Any = None
    tokenizer: Any = None
    engine: RolloutEngine | None = None
    slot: list[torch.nn.Parameter] = field(default_factory=list)

    def adopt(self, model: Any, tokenizer: Any) -> None:
        """The first tenant's freshly loaded policy becomes the pool's."""
        self.model, self.tokenizer = model, tokenizer
        self.slot = [p for p in model.parameters() if p.requires_grad]

    @torch.no_grad()
    def fresh(self, seed: int) -> None:
        """Fill the slot with the adapter ``load_policy(..., seed)`` would create, leaving torch's RNG where that
        leaves it."""
        model = self.model
        config = copy.deepcopy(model.peft_config["default"])  # PEFT keeps (and may edit) the config it is given
        torch.manual_seed(seed)
        model.add_adapter(_FRESH, config)
        try:
            fresh = dict(model.named_parameters())  # add_adapter may leave the new adapter trainable: read by name
            for name, p in zip(self._slot_names(), self.slot, strict=True):
                p.copy_(fresh[name.replace(".default.", f".{_FRESH}.")])
        finally:
            model.delete_adapter(_FRESH)
            model.set_adapter("default")
            for p in self.slot:
                p.requires_grad_(True)

    def _slot_names(self) -> list[str]:
        ids = {id(p) for p in self.slot}
        names = [n for n, p in self.model.named_parameters() if id(p) in ids]
        assert len(names) == len(self.slot) and all(".default." in n for n in names), names[:3]
        return names

    @torch.no_grad()
    def snapshot(self) -> Snapshot:
        """A copy of the slot's values and the RNG states now (a new tenant's, once its run is built)."""
        return Snapshot([p.detach().clone() for p in self.slot], rng_state())

    @torch.no_grad()
    def save(self, saved: Snapshot) -> None:
        """Write the slot's values and the RNG states into ``saved`` (the tenant leaving the slot), in place."""
        for value, p in zip(saved.adapter, self.slot, strict=True):
            value.copy_(p)
        saved.rng = rng_state()

    @torch.no_grad()
    def activate(self, saved: Snapshot, version: int) -> None:
        """Put a tenant's values back: its adapter into the slot, its RNG states, and the engine synced to them."""
        for p, value in zip(self.slot, saved.adapter, strict=True):
            p.copy_(value)
        set_rng_state(saved.rng)
        if self.engine is not None:
            self.engine.sync(self.model, version)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        self.engine = self.model = self.tokenizer = None
        self.slot = []
