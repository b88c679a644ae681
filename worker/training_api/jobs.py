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

from runtime import internal as api
from worker.runner import JobRun
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
        names it by). An ask that fails (the API unreachable) is logged; the sessions go on and the next ask
        retries."""
        try:
            if self.pool is None and not self._open(models):
                return
            assert self.pool is not None and self.jobs is not None
            while room() and self.jobs.claim(self.pool):
                pass
        except Exception:  # the pool's ask: the sessions here go on
            log.exception("could not ask for a job to train on the sessions' base")
        if self.pool is not None and not self.pool.tenants:  # what it claimed could not train: nothing to hold
            self.close()

    def round(self) -> None:
        """One turn of every job; the pool closes when its last job has ended."""
        assert self.pool is not None and self.jobs is not None
        try:
            self.jobs.round(self.pool)
        except Exception as exc:  # the pool itself failed: every job ends with it, the sessions go on
            log.exception("the pool of jobs on the sessions' base failed")
            self.close(exc)
            return
        if not self.pool.tenants:
            self.close()

    def close(self, exc: Exception | None = None) -> None:
        """Close the pool (its engine; the base stays the sessions') and give the base back; jobs still in it end
        with ``exc`` (the worker failed), or are handed back by their leases."""
        if self.jobs is not None and exc is not None:
            self.jobs.end_all(exc)
        elif self.jobs is not None:
            self.jobs.abandon()
        self._stack.close()  # (TurnPool's exit takes the device itself)
        if self._base is not None:
            self._give_back(self._base)
        self.pool = self.jobs = self._base = None
        self._stack = contextlib.ExitStack()

    def _give_back(self, base: SharedBase) -> None:
        with self.seat.device:  # a run may be entering or leaving the bases meanwhile (SharedBases is not thread-safe)
            self.seat.shared.leave(self, base)

    def _open(self, models: dict[Path, str]) -> bool:
        """Whether a job of a base the runs loaded was claimed, and a pool opened on that base to train it (each
        loaded base the sessions named tried in turn)."""
        from grpo_core.schemas.pooling import pool_key

        with self.seat.device:  # the runs' requests may be loading or freeing a base meanwhile
            bases = [b for b in self.seat.shared.loaded() if b.model_dir in models]
        for base in bases:
            with self.seat.device:
                if base.resident.model is None:  # its last run left meanwhile
                    continue
                self.seat.shared.borrow(self, base)
            assert base.model_dir is not None and base.cfg is not None
            try:
                jobs = JobTenants(self.doorbell, self.settings, pool_key(models[base.model_dir], base.cfg))
                claimed = jobs.next_claim()
            except BaseException:
                self._give_back(base)
                raise
            if claimed is None:
                self._give_back(base)
                continue
            self._start(base, jobs, *claimed)
            return True
        return False

    def _start(self, base: SharedBase, jobs: JobTenants, job: JobRun, claim: api.ClaimResponse) -> None:
        """A pool on ``base`` (borrowed), ``job`` its first tenant."""
        from grpo_core.hardware.device import resolve_placement
        from grpo_core.pool import TurnPool

        assert base.model_dir is not None and base.cfg is not None
        pool = TurnPool(
            base.model_dir,
            resolve_placement(base.cfg.device, base.cfg.precision),
            self.settings.reward_sandbox,
            self.settings.pool_sample_together,
            resident=base.resident,
            baton=self.seat.device,
            borrowed=True,
        )
        self.pool, self.jobs, self._base = self._stack.enter_context(pool), jobs, base
        log.info("a pool of jobs opens on the resident base of this worker's training runs (%s)", claim.model)
        jobs.take(pool, job, claim)
