"""A pool's tenants' work done together: one decode of every tenant's rollouts, each row through its own adapter, and
one forward/backward of every tenant's update micro-batches, each token through its own adapter.

Tenants in turn (grpo_core.pool) sample one after another, each a decode of its own: on a GPU a decode of one job's
32 rows leaves the device nearly idle (each token is one launch-bound forward), and on a CPU a small batch reads
every weight once per token for few rows. When several tenants sample at once, their rows can share one decode on
the resident base: every adapted layer computes W x + (x A_k)(s B_k) with the row's own tenant's adapter k
(grpo_core.update.lora_fused.row_adapters), and every row draws the noise it draws alone (its tenant's seed and
row numbers, grpo_core.rollout.engines.noise).

Updates the same way: a step's ``policy_update`` (``TenantEngine.update``, the run's ``update``) asks here too, and
every tenant's update micro-batches run in shared passes (grpo_core.update.together), each tenant's gradient handed
to it through the slot (``Resident.give_grads``), where its own clipping and optimizer step find it.

How the tenants meet: a pool that works together runs each round's turns in threads, one per tenant, each holding
the pool's *baton* (a lock: one tenant computes at a time, with its own values in the slot, grpo_core.resident)
from its turn's start to its end, except while it waits here. A tenant that samples (``TenantEngine.generate`` or
``continue_turns``) or updates asks, gives the baton up and waits; when every tenant still in its turn waits here,
the last one to ask (or the last turn to end) runs every ask at once, grouped by what must match (``Ask.key``:
for a decode its group size, length, temperature and nucleus; for an update grpo_core.update.together's key).
Which asks share a pass therefore follows from the tenants' programs, never from thread timing: the same pool
computes the same numbers every time.

Exactness: a row decoded together is its tenant's sample within rounding, not bit for bit (the batch is wider, the
prompts padded to the widest of all, and the adapter is applied beside W instead of merged into it), and so is a
gradient computed together; everything else (scoring, clipping, the optimizer step, checkpoints) runs in turn with
the tenant's own values, bit for bit as alone. A tenant that asks for exact reproduction
(``GRPOConfig.pool_exact``) samples and updates alone, in turn, on the pool's merged engine and its own slot.

Billing (usage metering counts each step's own time): the seconds a tenant waits here, less its share of the
pass (its rows, or its update's loss tokens, over the pass's), are what it did not cause; ``take_waited`` hands them
to the trainer, which leaves them out of the step's timing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import torch

from grpo_core.hardware.baton import Baton
from grpo_core.hardware.device import release_device_memory
from grpo_core.hardware.distributed import World
from grpo_core.resident import Resident
from grpo_core.rollout.batch import Rollout, eos_ids
from grpo_core.rollout.engines.base import RolloutEngine, Sampling
from grpo_core.rollout.engines.decode import decode_continuations, decode_together
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.lora_fused import row_adapters
from grpo_core.update.step import UpdatePath, policy_update, update_path
from grpo_core.update.tally import UpdateSums
from grpo_core.update.together import Part, policy_updates_together, together_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Update:
    """A tenant's update, as ``policy_update`` takes it (its values come from the slot when it runs)."""

    ro: Rollout
    adv: torch.Tensor
    cfg: GRPOConfig
    autocast: torch.dtype | None
    old_logp: torch.Tensor | None
    path: UpdatePath
    world: World
    key: Hashable


@dataclass(eq=False)
class Ask:
    """One tenant's call, waiting for a joint pass: prompts to sample (``generate``), token sequences to continue
    (``continue_turns``, with their ``rows``), or an update."""

    owner: object
    sampling: Sampling | None = None
    prompts: list[str] | None = None
    sequences: list[list[int]] | None = None
    rows: list[int] | None = None
    update: _Update | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None
    share: float = 0.0  # the seconds of its pass this ask accounts for

    @property
    def units(self) -> int:
        """What row_adapters counts for this ask: its prompts (a prefill each, then G rows), or its sequences."""
        return len(self.prompts) if self.prompts is not None else len(self.sequences or [])

    @property
    def weight(self) -> float:
        """Its part of its pass's work: its rows, or its update's loss tokens."""
        if self.update is not None:
            return float(self.update.ro.completion_mask.sum())
        return float(self.units)

    def key(self) -> Hashable:
        if self.update is not None:
            return ("update", self.update.key)
        s = self.sampling
        assert s is not None
        kind = "turns" if self.prompts is None else f"generate:{s.group_size}"
        return (kind, s.max_new_tokens, s.temperature, s.top_p)


class JointWork:
    """The decodes and updates of one pool's tenants that ask at once (see the module docstring). ``baton``: the
    lock each tenant holds while it computes; ``together``: whether a round's turns run in threads now (``begin``)."""

    def __init__(self, resident: Resident, baton: Baton) -> None:
        self.resident, self.baton = resident, baton
        self._lock = threading.Lock()
        self._running = 0
        self._waiting: list[Ask] = []
        self.decodes = 0  # groups of decodes run together (tests count them)
        self.updates = 0  # groups of updates run together

    @property
    def together(self) -> bool:
        return self._running > 0

    def begin(self, tenants: int) -> None:
        """A round of ``tenants`` turns starts, each in a thread of its own."""
        with self._lock:
            assert not self._waiting, "a round begins with no ask left"
            self._running = tenants

    def end(self) -> None:
        """A turn ended (its thread holds the baton): when every turn still running waits here, run their asks now."""
        with self._lock:
            self._running -= 1
            due = self._due()
        if due:
            self.run(due)

    def ask(self, ask: Ask) -> tuple[Any, float]:
        """``ask``'s result and the seconds its tenant waited on others' work. The caller holds the baton and has it
        back, with its own values in the slot, when this returns."""
        t = time.perf_counter()
        with self._lock:
            self._waiting.append(ask)
            due = self._due()
        if due:  # the last to ask runs every ask, still holding the baton
            self.run(due)
        else:
            self.baton.release()
            try:
                ask.ready.wait()
            finally:
                self.baton.acquire()
                self.resident.hold(ask.owner)
        waited = max(0.0, time.perf_counter() - t - ask.share)
        if ask.error is not None:
            raise ask.error
        return ask.result, waited

    def _due(self) -> list[Ask]:
        """Every waiting ask, taken, when every running turn waits (under ``_lock``); else none."""
        if not self._waiting or len(self._waiting) < self._running:
            return []
        due, self._waiting = self._waiting, []
        return due

    def run(self, asks: list[Ask]) -> None:
        """One pass per group of asks that may share one; each ask gets its result or the error that failed it (the
        other groups go on)."""
        groups: dict[Hashable, list[Ask]] = {}
        for a in asks:
            groups.setdefault(a.key(), []).append(a)
        try:
            for group in groups.values():
                t = time.perf_counter()
                self._settle(group)
                seconds, total = time.perf_counter() - t, sum(a.weight for a in group)
                for a in group:
                    a.share = seconds * a.weight / max(total, 1.0)
        finally:
            for a in asks:
                a.ready.set()

    def _settle(self, group: list[Ask]) -> None:
        """The group's results from one pass; if that fails (one tenant's data, the pass's memory), each ask's from
        a pass of its own, so a failure ends only the tenant it is due to (issue 45: a batch out of memory stops
        alone)."""
        try:
            results = self._run(group)
        except Exception as exc:
            if len(group) == 1:
                group[0].error = exc
                return
            log.warning(
                "a joint pass of %d tenants failed (%s: %s); each runs alone", len(group), type(exc).__name__, exc
            )
            release_device_memory()
            for a in group:
                self._settle([a])
            return
        for a, result in zip(group, results, strict=True):
            a.result = result

    def _run(self, group: list[Ask]) -> list[Any]:
        """The group's results from one decode of all its rows, each ask's through its owner's adapter, or from its
        updates' shared passes."""
        if group[0].update is not None:
            return self._update(group)
        resident = self.resident
        model, tokenizer = resident.model, resident.tokenizer
        stop = eos_ids(model, tokenizer)
        values = [resident.values_of(a.owner) for a in group]
        base = model.get_base_model()  # the transformers model, its LoRA layers fused
        self.decodes += 1
        samplings = [a.sampling for a in group if a.sampling is not None]
        with row_adapters(model, values, resident.slot, [a.units for a in group]):
            if group[0].prompts is not None:
                asks = [(a.prompts or [], s) for a, s in zip(group, samplings, strict=True)]
                return list(decode_together(base, tokenizer, asks, stop_ids=stop))
            pad = tokenizer.pad_token_id
            out = decode_continuations(
                base,
                [s for a in group for s in a.sequences or []],
                samplings[0],
                [r for a in group for r in a.rows or []],
                stop_ids=stop,
                pad_id=pad if pad is not None else stop[0],
                seeds=[s.seed for a, s in zip(group, samplings, strict=True) for _ in a.sequences or []],
            )
        parts, start = [], 0
        for a in group:
            parts.append(out[start : start + a.units])
            start += a.units
        return parts

    def _update(self, group: list[Ask]) -> list[UpdateSums]:
        """The group's update sums from shared passes (grpo_core.update.together), each owner's gradient given to it
        through the slot."""
        resident = self.resident
        parts = []
        for a in group:
            u = a.update
            assert u is not None
            parts.append(Part(u.ro, u.adv, u.cfg, u.autocast, u.old_logp, u.path, resident.values_of(a.owner)))
        first = group[0].update
        assert first is not None
        self.updates += 1
        out = policy_updates_together(resident.model, resident.slot, parts, first.world)
        for a, (_, grads) in zip(group, out, strict=True):
            resident.give_grads(a.owner, grads)
        return [sums for sums, _ in out]


class TenantEngine:
    """What a pool's tenant samples on (a RolloutEngine) and updates with (``update``, the run's): a joint pass while
    the pool's round runs together and the tenant allows it (``together``), else the pool's merged engine, synced to
    this tenant's values when it samples on it (``Resident.engine_for``), and ``policy_update`` on the slot, which
    holds them whenever the tenant holds the baton."""

    name = "merged"

    def __init__(self, work: JointWork, owner: object, *, together: bool) -> None:
        self.work, self.owner, self.together = work, owner, together
        self.version = 0  # the policy version its values are at (its last ``sync``)
        self._waited = 0.0

    @property
    def merged(self) -> RolloutEngine:
        """The pool's merged engine, synced to this tenant's values (it holds the slot when it samples)."""
        return self.work.resident.engine_for(self.owner, self.version)

    def _joins(self, sampling: Sampling | None = None) -> bool:
        return self.together and self.work.together and not (sampling is not None and sampling.step_prompts)

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        if not self._joins(sampling):
            return self.merged.generate(prompts, sampling)
        result, waited = self.work.ask(Ask(self.owner, sampling, prompts=prompts))
        self._waited += waited
        ro: Rollout = result
        return ro

    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        if not self._joins(sampling):
            return self.merged.continue_turns(sequences, sampling, rows)
        result, waited = self.work.ask(Ask(self.owner, sampling, sequences=sequences, rows=rows))
        self._waited += waited
        turns: list[tuple[list[int], list[float] | None]] = result
        return turns

    def update(
        self,
        model: Any,
        ro: Rollout,
        adv: torch.Tensor,
        cfg: GRPOConfig,
        autocast: torch.dtype | None,
        old_logp: torch.Tensor | None = None,
        world: World | None = None,
        path: UpdatePath | None = None,
    ) -> UpdateSums:
        """``policy_update``'s sums, its gradient left in the slot: in passes shared with the other tenants' updates
        when they may share them (grpo_core.update.together.together_key), else alone."""
        world = world or World()
        path = path or update_path(model, cfg, world)
        key = together_key(cfg, autocast, path, world)
        if key is None or not self._joins():
            return policy_update(model, ro, adv, cfg, autocast, old_logp, world, path)
        ask = Ask(self.owner, update=_Update(ro, adv, cfg, autocast, old_logp, path, world, key))
        result, waited = self.work.ask(ask)
        self._waited += waited
        sums: UpdateSums = result
        return sums

    def take_waited(self) -> float:
        """The seconds this tenant waited on other tenants' work since the last call (the trainer leaves them out of
        its step's timing)."""
        waited, self._waited = self._waited, 0.0
        return waited

    def sync(self, model: Any, step: int) -> None:
        """The tenant's values changed (policy version ``step``): the merged engine syncs to them when it next
        samples for it (``Resident.engine_for``)."""
        self.version = step
        self.work.resident.changed(self.owner)

    def suspend(self) -> None:
        engine = self.work.resident.engine
        if engine is not None:
            engine.suspend()

    def close(self) -> None:
        """Nothing of its own: the pool closes its engine after its last tenant."""
