"""Jobs trained on a pool of sessions' resident base: the reverse of a pool of jobs lending its resident to sessions
(worker.pool). A worker serving training-API sessions with room to spare borrows the base its runs loaded
(grpo_core.training_api.shared.SharedBases.borrow), opens a pool of jobs on it (grpo_core.pool.TurnPool with
``borrowed``, under the seat's device lock) and claims jobs of that base model and adapter shape
(grpo_core.schemas.pooling.pool_key), trained as tenants (worker.tenants.JobTenants) in rounds between the sessions'
requests, bit for bit as alone in turn. The base stays loaded while the jobs train, even if every session ends;
when the last job ends the pool closes its engine and gives the base back."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from worker.settings import WorkerSettings
from worker.tenants import JobTenants
from worker.training_api.session import Seat

if TYPE_CHECKING:
    from grpo_core.pool import TurnPool
    from grpo_core.training_api.shared import SharedBase

log = logging.getLogger(__name__)


class JobsOnRuns:
    """The pool of jobs on one of the seat's resident bases, open while it has jobs (``doorbell`` names this worker's
    asks in its logs)."""

    def __init__(self, settings: WorkerSettings, seat: Seat, doorbell: str) -> None:
        self.settings, self.seat, self.doorbell = settings, seat, doorbell
        self.pool: TurnPool | None = None
        self.jobs: JobTenants | None = None
        self._base: SharedBase | None = None
        self._stack = contextlib.ExitStack()

    @property
    def tenants(self) -> int:
        return self.pool.tenants if self.pool is not None else 0

    def fill(self, models: dict[Path, str], room: Callable[[], bool]) -> None:
        """Claim jobs while ``room()``: onto the open pool, else, once a job of a base the sessions' runs loaded is
        claimed, onto a pool opened on that base (``models``: each base model folder here, by the model id the API
        names it by)."""
        if self.pool is None and not self._open(models):
            return
        assert self.pool is not None and self.jobs is not None
        while room() and self.jobs.claim(self.pool):
            pass
        if not self.pool.tenants:  # what it claimed could not train (its inputs, its build): nothing to hold
            self.close()

    def round(self) -> None:
        """One turn of every job; the pool closes when its last job has ended."""
        assert self.pool is not None and self.jobs is not None
        try:
            self.jobs.round(self.pool)
        except Exception as exc:  # the pool itself failed: every job ends with it, the sessions go on
            log.exception("the pool of jobs on the sessions' base failed")
            self.jobs.end_all(exc)
        if not self.pool.tenants:
            self.close()

    def close(self, exc: Exception | None = None) -> None:
        """Close the pool (its engine; the base stays the sessions') and give the base back; jobs still in it end
        with ``exc`` (the worker failed), or are handed back by their leases."""
        if self.jobs is not None and exc is not None:
            self.jobs.end_all(exc)
        self._stack.close()
        if self._base is not None:
            self.seat.shared.leave(self, self._base)
        self.pool = self.jobs = self._base = None
        self._stack = contextlib.ExitStack()

    def _open(self, models: dict[Path, str]) -> bool:
        """Whether a job of a base the runs loaded was claimed, and a pool opened on that base to train it."""
        from grpo_core.hardware.device import resolve_placement
        from grpo_core.pool import TurnPool
        from grpo_core.schemas.pooling import pool_key

        with self.seat.device:  # the runs' requests may be loading or freeing a base meanwhile
            base = self.seat.shared.borrow(self)
        if base is None:
            return False
        assert base.model_dir is not None and base.cfg is not None
        model = models.get(base.model_dir)  # None: not a base this worker's sessions named, nothing to match
        jobs = JobTenants(self.doorbell, self.settings, pool_key(model, base.cfg)) if model is not None else None
        claimed = jobs.next_claim() if jobs is not None else None
        if jobs is None or claimed is None:
            self.seat.shared.leave(self, base)
            return False
        cfg = base.cfg
        pool = TurnPool(
            base.model_dir,
            resolve_placement(cfg.device, cfg.precision),
            self.settings.reward_sandbox,
            self.settings.pool_sample_together,
            resident=base.resident,
            baton=self.seat.device,
            borrowed=True,
        )
        self.pool, self.jobs, self._base = self._stack.enter_context(pool), jobs, base
        log.info("a pool of jobs opens on the resident base of this worker's training runs (%s)", model)
        jobs.take(pool, *claimed)
        return True
