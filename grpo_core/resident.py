"""The base model resident once for several owners: one adapter slot, the tokenizer, the engine. A pool's job tenants
(grpo_core.pool) and the training API's runs (grpo_core.training_api.shared) take turns in it the same way.

Every tenant of a pool trains an adapter of the same shape on the same base weights, so the policy is loaded once
(``grpo_core.policy.load_policy``, for the first tenant) and its LoRA parameters are a *slot*: the Parameter objects
every tenant's optimizer holds, filled with the tenant's values while it computes (``hold``) and copied out when another
tenant takes the slot (``park``: into buffers made at the owner's first park). Copying values in and out of the same
tensors, instead of one PEFT adapter per tenant, keeps everything that holds those tensors valid across tenants: the
fused LoRA layers (grpo_core.update.lora_fused, whose casts are keyed by the tensors' versions), captured graphs (keyed
by their addresses), the optimizers. A turn computes with exactly the values the tenant computes with alone, so the pool
changes no number (tests/unit/test_pool.py holds adapters bit-identical to runs alone).

A new tenant's adapter starts as its run alone would start it: ``fresh`` seeds torch with the tenant's seed and
lets PEFT create an adapter of the same config (the same layers, in the same order, drawing the same numbers as
``get_peft_model`` did), copies it into the slot and deletes it. The merged rollout engine is shared too: it holds
W + ΔW of whatever adapter it last synced, and ``engine_for`` syncs it to the holder's when the holder samples on it
and it holds another's (a pure function of the slot's values: ``MergedEngine.sync`` rebuilds every adapted weight
from W). Lazily, because a pool whose tenants sample together (grpo_core.joint) never samples on it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from grpo_core.checkpoint import rng_state, set_rng_state
from grpo_core.rollout.engines.base import RolloutEngine

_FRESH = "grpo-pool-fresh"  # the name of the adapter ``fresh`` creates for a moment


@dataclass
class Snapshot:
    """An owner's values while another holds the slot: its adapter, its RNG states, and the gradients it had
    accumulated (moved out of the slot, not copied; a training-API run may hold some between its calls)."""

    adapter: list[Tensor]
    rng: dict[str, Any]
    grads: list[Tensor | None] = field(default_factory=list)


@dataclass
class Resident:
    """The pool's policy (a PEFT model with one adapter, "default"), tokenizer and rollout engine; None until the
    first tenant loads them (grpo_core.run.build_run). ``holder``: whose values the slot, the RNG states and the
    engine hold now (any object: a pool's tenant, a training-API run); ``parked``: every other owner's, by id."""

    model: Any = None
    tokenizer: Any = None
    engine: RolloutEngine | None = None
    slot: list[torch.nn.Parameter] = field(default_factory=list)
    holder: object | None = None
    parked: dict[int, Snapshot] = field(default_factory=dict)
    engine_holds: object | None = None  # whose values the engine was last synced to (``engine_for``)

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

    def seat(self, owner: object) -> None:
        """``owner`` holds the slot as it is now: the values just put there for it (loaded, ``fresh``, resumed)."""
        assert self.holder is None, "park the holder before filling the slot for another"
        self.holder = owner
        self.engine_holds = None  # whatever it was synced to, not these values

    @torch.no_grad()
    def hold(self, owner: object) -> None:
        """Put ``owner``'s values back (its adapter into the slot, its gradients and RNG states), parking the
        holder's; nothing to do when ``owner`` holds the slot already (a pool of one copies nothing)."""
        if self.holder is owner:
            return
        self.park()
        saved = self.parked[id(owner)]
        for p, value, grad in zip(self.slot, saved.adapter, saved.grads, strict=True):
            p.copy_(value)
            p.grad = grad
        saved.grads = []
        set_rng_state(saved.rng)
        self.holder = owner

    def engine_for(self, owner: object, version: int) -> RolloutEngine:
        """The engine, synced to ``owner``'s values at policy ``version`` unless it holds them already; ``owner``
        holds the slot."""
        assert self.engine is not None and self.holder is owner, "the holder samples on the engine"
        if self.engine_holds is not owner:
            self.engine.sync(self.model, version)
            self.engine_holds = owner
        return self.engine

    def changed(self, owner: object) -> None:
        """``owner``'s values changed (an optimizer step): the engine no longer holds them."""
        if self.engine_holds is owner:
            self.engine_holds = None

    @torch.no_grad()
    def park(self) -> None:
        """The holder leaves the slot: its values and RNG states are copied into its snapshot (made at its first
        park, reused after), its gradients moved out."""
        if self.holder is None:
            return
        saved = self.parked.get(id(self.holder))
        if saved is None:
            saved = self.parked[id(self.holder)] = Snapshot([p.detach().clone() for p in self.slot], rng_state())
        else:
            for value, p in zip(saved.adapter, self.slot, strict=True):
                value.copy_(p)
            saved.rng = rng_state()
        saved.grads = [p.grad for p in self.slot]
        for p in self.slot:
            p.grad = None
        self.holder = None

    def give_grads(self, owner: object, grads: Sequence[Tensor | None]) -> None:
        """Gradients computed for ``owner`` away from the slot (a pool's joint update, grpo_core.update.together): into
        the slot when it holds it, else with its snapshot, where ``hold`` puts them back."""
        if self.holder is owner:
            for p, g in zip(self.slot, grads, strict=True):
                p.grad = g
        else:
            self.parked[id(owner)].grads = list(grads)

    @torch.no_grad()
    def add_grads(self, owner: object, grads: list[Tensor | None]) -> None:
        """Gradients computed for ``owner`` away from the slot added to those it has accumulated, wherever they are
        (a training-API run's gradients add up across its calls until its optimizer step)."""
        have = [p.grad for p in self.slot] if self.holder is owner else self.parked[id(owner)].grads
        pairs = zip(have, grads, self.slot, strict=True)
        self.give_grads(owner, [h if g is None else g.to(s.dtype) if h is None else h + g for h, g, s in pairs])

    def values_of(self, owner: object) -> list[Tensor]:
        """``owner``'s adapter values in slot order, wherever they are now (the slot, or its snapshot)."""
        if self.holder is owner:
            return [p.detach() for p in self.slot]
        return self.parked[id(owner)].adapter

    def leave(self, owner: object) -> None:
        """``owner`` is done: its values are dropped (the slot's gradients too, when it held it)."""
        self.changed(owner)
        if self.holder is owner:
            for p in self.slot:
                p.grad = None
            self.holder = None
        self.parked.pop(id(owner), None)

    def close_engine(self) -> None:
        """Close the rollout engine (a pool of jobs on training-API runs' resident is done with it); the base stays."""
        if self.engine is not None:
            self.engine.close()
        self.engine = self.engine_holds = None

    def close(self) -> None:
        self.close_engine()
        self.model = self.tokenizer = self.holder = None
        self.slot = []
        self.parked.clear()
