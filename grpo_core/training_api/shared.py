"""Training runs that share one resident base model: the training API's side of a pool (issue 45).

A worker serving several training-API sessions would otherwise load the base model once per training run
(``TrainingModel`` alone: ``load_policy``). Runs of one base model and adapter shape share it here instead, as a
pool's job tenants do (grpo_core.resident): the policy is loaded once, its LoRA parameters are a *slot*, and the run
that computes holds the slot (``SharedBase.hold``); the run leaving it takes its values (copied into buffers made
once) and its accumulated gradients (moved, not copied) along. Each run keeps its own optimizer over the slot's
Parameter objects (AdamW keys its state by parameter, per optimizer), its own version, its own RNG states.

Exactness: a run holding the slot computes with exactly the values, gradients and RNG states it would have alone,
with the same kernels, so its results never depend on which other runs share the base
(tests/unit/test_training_shared.py holds them bit-identical to runs alone). Runs take turns here; calls of several
runs computed in one pass are grpo_core.training_api.batched's (sampling) and grpo_core.training_api.together's
(forward_backward), equal to each run alone within rounding.

A pool of jobs can lend its resident (``lend``): runs that fit it then share the jobs' base weights and slot, taking
turns with the jobs' tenants under the pool's baton (worker.pool: jobs and sessions on one worker). The other way, a
pool of jobs can borrow a base the runs loaded (``borrow``; worker.training_api.jobs), which then stays loaded until
the pool gives it back, even if its runs end.

Not thread-safe: the caller runs one request at a time on a ``SharedBases`` (worker.training_api.pool holds a lock).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from grpo_core.hardware.device import release_device_memory
from grpo_core.policy import load_policy
from grpo_core.resident import Resident
from grpo_core.schemas.config import GRPOConfig

log = logging.getLogger(__name__)


@dataclass(eq=False)
class SharedBase:
    """One base model and adapter shape, resident once (``resident``: its slot, and which run holds it), and the
    runs on it."""

    key: tuple[Any, ...]
    resident: Resident = field(default_factory=Resident)
    users: set[int] = field(default_factory=set)  # id() of each run on it, and of a pool of jobs borrowing it
    lent: bool = False  # another's resident (a pool of jobs, grpo_core.pool): its runs never free it
    model_dir: Path | None = None  # what its first run loaded it from (``enter``)
    cfg: GRPOConfig | None = None  # its adapter shape, device and precision
    base_name: str | None = None

    @property
    def model(self) -> Any:
        return self.resident.model

    @property
    def tokenizer(self) -> Any:
        return self.resident.tokenizer

    @property
    def slot(self) -> list[Any]:
        return self.resident.slot

    def enter(self, run: object, model_dir: Path, cfg: GRPOConfig, seed: int, base_name: str | None) -> None:
        """Seat ``run`` holding a fresh adapter: the one ``load_policy(model_dir, cfg, seed)`` creates, the base
        loaded for the first run, the slot filled from ``seed`` for the next ones (Resident.fresh)."""
        if self.resident.model is None:
            model, tokenizer = load_policy(model_dir, cfg, seed, base_name=base_name)
            self.resident.adopt(model, tokenizer)
            self.model_dir, self.cfg, self.base_name = model_dir, cfg, base_name
        else:
            if self.lent:
                log.info("a training run shares the resident base of a pool of jobs (%s)", model_dir.name)
            self.resident.park()
            self.resident.fresh(seed)
        self.resident.seat(run)
        self.users.add(id(run))

    def hold(self, run: object) -> None:
        """Put ``run``'s values, gradients and RNG states in the slot (nothing to do when it holds it already)."""
        assert id(run) in self.users, "a run holds the slot only after it entered"
        self.resident.hold(run)

    def values_of(self, run: object) -> list[Tensor]:
        """``run``'s adapter values in slot order, wherever they are now: what a decode with one adapter per row
        reads (grpo_core.training_api.batched)."""
        return self.resident.values_of(run)

    def add_grads(self, run: object, grads: list[Tensor | None]) -> None:
        """Gradients computed for ``run`` in a pass shared with other runs (grpo_core.training_api.together), added to
        those it has accumulated since its last optimizer step, wherever they are."""
        self.resident.add_grads(run, grads)

    def leave(self, run: object) -> bool:
        """``run`` is done with the base; True when it was the last and the base was freed."""
        self.resident.leave(run)
        self.users.discard(id(run))
        if self.users or self.lent:
            return False
        self.resident.close()
        release_device_memory()
        return True


class SharedBases:
    """The bases resident for one worker's training runs, by base model folder and adapter shape (runs of other
    shapes each have a base of their own: one slot holds one shape)."""

    def __init__(self) -> None:
        self._bases: dict[tuple[Any, ...], SharedBase] = {}

    @staticmethod
    def key(model_dir: Path, cfg: GRPOConfig, base_name: str | None) -> tuple[Any, ...]:
        """Runs of one key fit one base: its folder, the adapter's shape, the device and precision, and the base
        model its adapters name."""
        device = torch.device(cfg.device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        return (str(model_dir), cfg.lora.model_dump_json(), str(device), cfg.precision, base_name)

    def lend(self, resident: Resident, model_dir: Path, cfg: GRPOConfig, base_name: str | None) -> None:
        """Runs that fit ``resident`` (its base in ``model_dir``, its adapter shape, device and precision in ``cfg``:
        a pool of jobs', grpo_core.pool) enter it as owners beside the pool's tenants, sharing its base weights; it
        stays its lender's, never freed by them. Whoever computes on it holds the lender's lock (the pool's baton)."""
        key = self.key(model_dir, cfg, base_name)
        assert key not in self._bases, "one resident per key"
        self._bases[key] = SharedBase(key, resident, lent=True)

    def enter(self, run: object, model_dir: Path, cfg: GRPOConfig, seed: int, base_name: str | None) -> SharedBase:
        """Seat ``run`` (holding the slot, with its fresh adapter) on the base it fits, loaded if none is."""
        key = self.key(model_dir, cfg, base_name)
        base = self._bases.get(key)
        if base is None:
            base = self._bases[key] = SharedBase(key)
        try:
            base.enter(run, model_dir, cfg, seed, base_name)
        except BaseException:
            if not base.users and not base.lent:
                self._bases.pop(key, None)
            raise
        return base

    def leave(self, run: object, base: SharedBase) -> None:
        if base.leave(run):
            self._bases.pop(base.key, None)

    def loaded(self) -> list[SharedBase]:
        """The bases this worker's runs loaded (not those lent to them), each one a pool of jobs could borrow."""
        return [b for b in self._bases.values() if not b.lent and b.resident.model is not None and b.cfg is not None]

    @staticmethod
    def borrow(pool: object, base: SharedBase) -> None:
        """``base`` kept loaded for a pool of jobs training on it (grpo_core.pool.TurnPool with ``borrowed``) until
        ``leave(pool, base)``, even if its runs end."""
        base.users.add(id(pool))

    def __len__(self) -> int:
        return len(self._bases)
