"""Tenants in turn: several training runs of one base model on one resident copy of it, in one process.

A GPU that trains one small job sits mostly idle (issue 45: a Qwen2.5-0.5B step peaked at 9 of 80 GiB). A pool
loads the base model once (grpo_core.resident) and gives each tenant its own adapter values, optimizer state, RNG
states, data cursor, callbacks and checkpoints (its own ``Run``: grpo_core.run.build_run). Turns go round: each
tenant in turn runs one optimizer step (grpo_core.trainer.turns) on its own values, put into the shared slot before
the turn and saved back when another tenant takes it (a tenant alone in the pool keeps the slot: no copy, no
engine re-sync between its steps).

Working together (``together``; by default on a GPU, ``sample_together``): while two or more tenants train, each
round's turns run in threads, one per tenant, and the tenants' rollouts share one decode, each row through its own
tenant's adapter, and their updates share forward/backward passes, each token through its own tenant's adapter
(grpo_core.joint); everything else in a turn (scoring, the optimizer step, the checkpoint) still runs one tenant at
a time.

Exactness: a turn computes what the tenant's run alone computes at that step, bit for bit (the same values in the
same tensors, the same RNG states, the same kernels), except for rollouts and gradients computed together, which
equal the run alone's within rounding (grpo_core.joint). A tenant whose config asks for it (``pool_exact``), or
every tenant of a pool with ``together`` off, works alone in turn, so its adapter never depends on who shared the
pool: tests/unit/test_pool.py holds adapters equal to their runs alone in fp32, bit for bit in turn, and
tests/unit/test_pool_together.py within a stated bound together.

Faults: a tenant whose build or step raises (its grader, its data, its memory) ends with that exception as its
result, and the others go on; a tenant asked to stop (cancel, pause, shutdown: its callbacks) stops at its next turn
with its checkpoint, as a run alone does. ``add`` takes a new tenant between rounds.

What a pool needs of its tenants (``check_tenant``, refused with the reason; grpo_core.schemas.pooling decides it for
the API's scheduler too): one base model and adapter shape (``lora``), the merged rollout engine in this process
(``max_staleness`` 0, one rank), no readiness probe. The pool sets every tenant's device and precision to its own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from grpo_core.errors import UserError
from grpo_core.hardware.baton import Baton
from grpo_core.hardware.device import Placement, release_device_memory, resolve_placement
from grpo_core.hardware.distributed import World
from grpo_core.hardware.memory import POOL_CAP, PoolRoom, kv_token_bytes, pool_room
from grpo_core.joint import JointWork, TenantEngine
from grpo_core.resident import Resident
from grpo_core.rewards.base import Grader
from grpo_core.run import Callbacks, MainRank, Run, RunInputs, build_run, check_layout
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.pooling import pool_key, pool_problem
from grpo_core.trainer import TrainResult, turns
from grpo_core.update.lora_fused import rows_problem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TenantSpec:
    """One tenant: what ``grpo_core.trainer.train`` takes for a run alone."""

    cfg: GRPOConfig
    rows: list[dict[str, Any]]
    graders: Sequence[Grader]
    callbacks: Callbacks
    work_dir: Path
    seed: int = 0
    resume_from: Path | None = None
    valid_rows: list[dict[str, Any]] | None = None
    base_name: str | None = None
    environment: EnvironmentSpec | None = None


@dataclass
class _Tenant:
    index: int
    engine: TenantEngine  # what it samples on; also its key in the resident's slot
    run: Run
    steps: Generator[None, None, TrainResult]
    cleanup: contextlib.ExitStack


@dataclass
class TurnPool:
    """A pool of tenants of the base model in ``model_dir`` on ``placement``. Use as a context manager; ``add``
    tenants, then ``run`` (or ``round`` at a time, adding tenants between rounds); ``results`` holds each tenant's
    ``TrainResult`` or the exception that ended it, by the order they were added. ``together``: the tenants'
    rollouts and updates are computed together while several train (see the module docstring); None: on a GPU, not
    on a CPU (``sample_together`` says why). ``resident`` and ``baton``: a pool on another's resident (training-API
    runs', grpo_core.training_api.shared: ``borrowed``) computes under their lock and leaves their base loaded."""

    model_dir: Path
    placement: Placement
    sandbox_tier: str = "auto"
    together: bool | None = None
    resident: Resident = field(default_factory=Resident)
    # held by whoever computes on the resident: a tenant for its turn (but while it waits for work done together), and
    # anyone the pool lends its resident to (grpo_core.training_api.shared.SharedBases.lend) for each of its calls
    baton: Baton = field(default_factory=Baton)
    borrowed: bool = False  # the resident is another's: the pool closes only the engine it started on it
    results: list[TrainResult | Exception | None] = field(default_factory=list)
    _active: list[_Tenant] = field(default_factory=list)
    _key: str | None = None  # the first tenant's pool key (grpo_core.schemas.pooling): every tenant's must match
    _work: JointWork | None = None
    _threads: ThreadPoolExecutor | None = None
    _thread_count: int = 0

    def __enter__(self) -> TurnPool:
        self._work = JointWork(self.resident, self.baton)
        if self.together is None:
            self.together = sample_together(self.placement)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._threads is not None:
            self._threads.shutdown()
        with self.baton:
            for tenant in self._active:
                self.resident.leave(tenant.engine.owner)
                tenant.cleanup.close()
            self._active.clear()
            if self.borrowed:
                self.resident.close_engine()
            else:
                self.resident.close()
        release_device_memory()

    @property
    def tenants(self) -> int:
        """Tenants still training."""
        return len(self._active)

    @property
    def joint_decodes(self) -> int:
        """Joint decodes of the tenants' rollouts so far (grpo_core.joint)."""
        return 0 if self._work is None else self._work.decodes

    @property
    def joint_updates(self) -> int:
        """Joint updates of the tenants so far, each one or more shared passes (grpo_core.update.together)."""
        return 0 if self._work is None else self._work.updates

    def planned_room(self, cap: int = POOL_CAP) -> PoolRoom:
        """What this pool's device holds (grpo_core.hardware.memory.pool_room), from the peak of the latest step on
        it (the trainer opens a peak window per step), its tenants' adapter and rollout shapes, and the adapted
        weights a training run's sampler copies; on a CPU, where memory is not what limits a pool, ``cap`` tenants."""
        if not self.placement.is_cuda or self.resident.model is None:
            return PoolRoom(room=2**62, per_job=1, per_run=1, cap=cap)
        from peft.tuners.lora import LoraLayer

        device, model = self.placement.device, self.resident.model
        total = int(torch.cuda.get_device_properties(device).total_memory)
        peak = int(torch.cuda.max_memory_allocated(device))
        lora = sum(p.numel() for p in self.resident.slot)
        weights: list[Any] = [m.get_base_layer().weight for m in model.modules() if isinstance(m, LoraLayer)]
        adapted = sum(int(w.numel()) * int(w.element_size()) for w in weights)
        kv = 0
        if self._joint_possible():  # a joint decode holds every tenant's rows' KV cache at once
            cfgs = [t.run.cfg for t in self._active]
            rows = max((c.batch_size * c.group_size for c in cfgs), default=0)
            tokens = max((c.max_prompt_tokens + c.max_completion_tokens for c in cfgs), default=0)
            kv = rows * tokens * kv_token_bytes(model)
        return pool_room(total, peak, lora, adapted_bytes=adapted, kv_per_tenant=kv, cap=cap)

    def add(self, spec: TenantSpec) -> int:
        """Build ``spec``'s run on the pool's policy (its first step waits for its turn); its index in ``results``.
        A tenant the pool cannot hold raises UserError; one whose build fails ends with that error as its result."""
        assert self._work is not None, "a pool is used as a context manager"
        cfg = self.placed(spec.cfg)
        key = check_tenant(cfg, spec.base_name, self._key)
        check_layout(cfg, spec.rows, World(), None)
        index = len(self.results)
        self.results.append(None)
        inputs = RunInputs(
            self.model_dir, spec.rows, spec.graders, spec.work_dir, spec.seed, spec.resume_from, spec.valid_rows,
            spec.base_name, spec.environment, self.sandbox_tier, None,
        )  # fmt: skip
        with self.baton:  # whoever the pool lends its resident to waits while the slot takes the new adapter
            self._build(index, key, cfg, inputs, spec.callbacks)
        return index

    def _build(self, index: int, key: str, cfg: GRPOConfig, inputs: RunInputs, callbacks: Callbacks) -> None:
        """The new tenant's run built on the resident (its adapter fresh or resumed in the slot), and seated; or its
        build's error as its result."""
        assert self._work is not None
        world, cleanup = World(), contextlib.ExitStack()
        alone = self.resident.model is None  # the first tenant loads what the pool keeps
        engine = TenantEngine(self._work, object(), together=bool(self.together) and not cfg.pool_exact)
        self.resident.park()  # building the run fills the slot with the new tenant's adapter
        try:
            main = MainRank(callbacks, world, self.placement.device)
            run = build_run(cfg, inputs, self.placement, world, main, cleanup, self.resident, engine)
        except Exception as exc:  # the tenant's boundary: it ends with its error, the pool goes on
            cleanup.close()
            self.results[index] = exc
            if alone:  # what it loaded no other tenant holds: the next one starts clean
                self.resident.close()
            return
        self._key = key
        run.update = engine.update  # its updates in passes shared with the others' when they may share them
        tenant = _Tenant(index, engine, run, turns(run), cleanup)
        self.resident.seat(engine.owner)
        self._active.append(tenant)

    def round(self) -> list[tuple[int, TrainResult | Exception]]:
        """One turn of every tenant still training, in the order they came (in threads, their rollouts decoded
        together, when ``_joint``); a tenant that finishes or fails leaves the pool. What ended in this round:
        (index, its result or error)."""
        active = list(self._active)
        if self._joint():
            outcomes = self._turns_together(active)
        else:
            outcomes = []
            for tenant in active:
                with self.baton:  # others on the resident (training-API runs lent it, ``baton``) wait
                    outcomes.append(self._turn(tenant))
        ended: list[tuple[int, TrainResult | Exception]] = []
        for tenant, outcome in zip(active, outcomes, strict=True):
            if outcome is None:
                continue
            self.results[tenant.index] = outcome
            ended.append((tenant.index, outcome))
            self._active.remove(tenant)
            with self.baton:
                self.resident.leave(tenant.engine.owner)
                tenant.cleanup.close()
            if isinstance(outcome, Exception):
                release_device_memory()
        return ended

    def run(self) -> list[TrainResult | Exception | None]:
        """Rounds until every tenant has finished, stopped or failed."""
        while self._active:
            self.round()
        return self.results

    def _joint(self) -> bool:
        """Whether this round's turns run together: two tenants or more, one of them sampling together, on a
        policy whose LoRA layers can run per row (grpo_core.update.lora_fused.rows_problem)."""
        return len(self._active) > 1 and self._joint_possible()

    def _joint_possible(self) -> bool:
        """Whether tenants of this pool work together once two or more train."""
        return any(t.engine.together for t in self._active) and rows_problem(self.resident.model) is None

    def _turns_together(self, active: list[_Tenant]) -> list[TrainResult | Exception | None]:
        """Every tenant's turn in a thread of its own, one computing at a time (the baton), their rollouts decoded
        together (grpo_core.joint)."""
        assert self._work is not None
        if self._threads is None or self._thread_count < len(active):
            if self._threads is not None:
                self._threads.shutdown()
            self._threads = ThreadPoolExecutor(max_workers=len(active), thread_name_prefix="pool-tenant")
            self._thread_count = len(active)
        self._work.begin(len(active))
        futures = [self._threads.submit(self._turn_in_thread, tenant) for tenant in active]
        return [f.result() for f in futures]

    def _turn_in_thread(self, tenant: _Tenant) -> TrainResult | Exception | None:
        assert self._work is not None
        # a thread's current CUDA device starts at 0: the tenant's work follows the pool's device
        device = torch.cuda.device(self.placement.device) if self.placement.is_cuda else contextlib.nullcontext()
        with self.baton, device:
            try:
                return self._turn(tenant)
            finally:
                self._work.end()  # the others may be waiting for this turn to sample or end

    def _turn(self, tenant: _Tenant) -> TrainResult | Exception | None:
        """The tenant's next optimizer step on its own values; its result when it finished or failed (its failure
        ends it alone), None when it goes on."""
        self.resident.hold(tenant.engine.owner)  # nothing to do if it kept the slot
        try:
            next(tenant.steps)
        except StopIteration as done:
            result: TrainResult = done.value
            return result
        except Exception as exc:  # the tenant's boundary: its failure ends it alone
            log.warning("pool tenant %d failed: %s: %s", tenant.index, type(exc).__name__, exc)
            return exc
        return None

    def placed(self, cfg: GRPOConfig) -> GRPOConfig:
        """The tenant's config on the pool's device and precision, sampling on the engine the pool shares, and
        (unless it asks) without captured update graphs: each tenant's graphs would hold a memory pool of their
        own, where tenants in turn hold one step's activations at a time."""
        update: dict[str, object] = {"device": str(self.placement.device), "precision": self.placement.precision}
        update["rollout_engine"] = "merged" if cfg.rollout_engine == "auto" else cfg.rollout_engine
        if cfg.capture_update is None:
            update["capture_update"] = False
        return cfg.model_copy(update=update)


def sample_together(placement: Placement) -> bool:
    """Whether a pool on ``placement`` works together by default (grpo_core.joint): on a GPU, where a decode step or
    an update pass of one small job is launch-bound and more rows cost little more; not on a CPU, where the
    arithmetic grows with the rows and threads add their own costs (bench.pool --together on: docs/benchmarks.md)."""
    return placement.is_cuda


def check_tenant(cfg: GRPOConfig, base_name: str | None, pool: str | None) -> str:
    """The tenant's pool key (grpo_core.schemas.pooling), or a UserError naming why the pool cannot hold it: what
    it needs of its own, or the base model and adapter shape it must share with the pool (key ``pool``)."""
    problem = pool_problem(cfg)
    if problem is not None:
        raise UserError(f"this job cannot share a worker: {problem}")
    key = pool_key(base_name or "", cfg)
    if pool is not None and key != pool:
        raise UserError(
            "lora: a pool's tenants train adapters of one shape (rank, alpha, dropout, target modules) on one base "
            f"model; this pool's: {pool}"
        )
    return key


def train_in_turn(
    model_dir: Path,
    tenants: Sequence[TenantSpec],
    *,
    placement: Placement | None = None,
    sandbox_tier: str = "auto",
    together: bool | None = None,
) -> list[TrainResult | Exception | None]:
    """Train ``tenants`` (one base model, ``model_dir``) in turn on one resident copy of it, their rollouts decoded
    together as ``together`` says (TurnPool); each one's ``TrainResult``, or the exception that ended it.
    ``placement``: default resolved from the first tenant's config."""
    if not tenants:
        return []
    first = tenants[0].cfg
    placement = placement or resolve_placement(first.device, first.precision)
    with TurnPool(model_dir, placement, sandbox_tier, together) as pool:
        for spec in tenants:
            pool.add(spec)
        return pool.run()
