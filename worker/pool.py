"""A worker's pool: jobs of one base model trained in turn on one resident copy of it (grpo_core.pool), their rollouts
and updates computed together where ``POOL_SAMPLE_TOGETHER`` says (by default on a GPU).

The first job a worker process claims decides: a job that may share a worker (grpo_core.schemas.pooling) opens a
pool of up to ``POOL_TENANTS`` tenants; any other runs alone (worker.runner.JobRun.serve). Between rounds the pool
asks the API for more jobs with its key (the same base model and adapter shape), under the scheduler's usual order
and each project's limit (api.jobs.claims.claim_next with ``pool``), so a job queued behind a busy worker starts on
it at the next round instead of waiting for its own GPU.

Training-API sessions join a pool of jobs too, while it has room: those whose first request creates a run of the
pool's base model and adapter shape (the API's ``claim-next`` with ``shape``). Their runs take the jobs' resident as
owners of its slot (grpo_core.training_api.shared.SharedBases.lend: one copy of the base weights for jobs and runs),
each session served in a thread of its own (worker.training_api.pool.Sessions) whose calls take the pool's baton
between the jobs' turns (bit for bit as alone where both compute in turn). The pool stays open while a job or a
session is served.

Each tenant is a job as ``JobRun`` runs it: its own lease and heartbeat, its events, checkpoints and tracking run
(worker.reporting.Reporter), its finish; a cancel, pause, preemption or this worker's shutdown stops it at its
next turn; its failure (its grader, its data, its memory) ends it alone. A worker that dies loses no tenant: each
lease expires and each job resumes from its own last checkpoint wherever it is claimed next, pooled or not,
as a run alone would (grpo_core.pool trains a tenant bit for bit as alone in turn, within rounding when its rollouts
are decoded together).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from runtime import internal as api
from runtime import training_api as tc
from worker.client import InternalClient
from worker.job import model_cache
from worker.runner import JobRun
from worker.settings import WorkerSettings
from worker.slots import FILL_EVERY, job_slots, works_together
from worker.tenants import JobTenants, Tenant
from worker.training_api.pool import Sessions
from worker.training_api.session import Seat

if TYPE_CHECKING:
    from grpo_core.hardware.memory import PoolRoom
    from grpo_core.pool import TurnPool

log = logging.getLogger(__name__)


class PoolRun:
    """One worker process's work from a doorbell: a job alone, or a pool of jobs in turn."""

    def __init__(self, doorbell: str, settings: WorkerSettings) -> None:
        self.doorbell, self.settings = doorbell, settings
        self.slots, self.planning = job_slots(settings)  # planning: 1 tenant until the memory plan sizes the pool
        self.plan: PoolRoom | None = None  # the memory plan, once made
        self.key: str | None = None
        self.lead_model = ""  # the pool's base model id, as sessions name it (the lead job's model)
        self.shape: tc.RunShape | None = None  # the adapter shape of the sessions' runs it lends its resident to
        self.jobs: JobTenants | None = None  # the pool's jobs, once it opens
        self._next_fill = 0.0  # monotonic time of the next ask for more tenants

    def run(self) -> None:
        lead = JobRun(self.doorbell, self.settings)
        claim = lead.claim_next()
        if claim is None:
            return
        self.key = self._key(claim) if self.slots > 1 else None
        if self.key is None:
            lead.serve(claim)
            return
        self.lead_model = claim.model
        try:
            self._run_pool(lead, claim)
        finally:
            model_cache(self.settings).release_all()

    def _key(self, claim: api.ClaimResponse) -> str | None:
        from grpo_core.schemas.config import GRPOConfig
        from grpo_core.schemas.pooling import pool_key, pool_problem

        try:
            cfg = GRPOConfig.model_validate(claim.hyperparameters)
        except ValueError:  # the run alone fails it with the reason
            return None
        res = claim.resources
        if pool_problem(cfg, res.devices, res.nodes, res.rollout_devices) is not None:
            return None
        return pool_key(claim.model, cfg)

    def _run_pool(self, lead: JobRun, claim: api.ClaimResponse) -> None:
        from grpo_core.hardware.device import resolve_placement
        from grpo_core.pool import TurnPool

        assert self.key is not None
        jobs = self.jobs = JobTenants(self.doorbell, self.settings, self.key)
        first = jobs.tenant(lead, claim)
        if first is None or first.spec is None or first.model_dir is None:
            return
        cfg = first.spec.cfg
        placement = resolve_placement(cfg.device, cfg.precision)  # also sets torch's threads
        try:
            together = self.settings.pool_sample_together
            with TurnPool(first.model_dir, placement, self.settings.reward_sandbox, together) as pool:
                jobs.add(pool, first)
                sessions = self._sessions(pool, first) if pool.tenants else None
                try:
                    self._rounds(pool, jobs, sessions)
                finally:
                    if sessions is not None:
                        sessions.stop()
        except Exception as exc:  # the pool itself failed: every tenant ends with it (no lease is left beating)
            log.exception("the pool failed; ending its %d tenants", len(jobs.tenants))
            jobs.end_all(exc)

    def _rounds(self, pool: TurnPool, jobs: JobTenants, sessions: Sessions | None) -> None:
        """Rounds of the jobs' turns, more tenants claimed between them, while a job or a session is served (with
        sessions only, they compute under the pool's baton and the worker waits for them, or for a job to join)."""
        while True:
            self._fill(pool, jobs, sessions)
            if pool.tenants:
                jobs.round(pool)
                if self.planning:  # the first job's step ran: its peak and adapter size the pool
                    self.plan, self.planning = pool.planned_room(self.slots), False
                    log.info("the memory plan makes room for %d job(s) on this worker", self.plan.jobs)
            elif sessions is not None and len(sessions):
                time.sleep(FILL_EVERY)
            else:
                return

    def _sessions(self, pool: TurnPool, first: Tenant) -> Sessions | None:
        """The training-API sessions this pool serves beside its jobs, their runs lent its resident when they have
        its adapter shape (grpo_core.training_api.shared.SharedBases.lend: the jobs' base weights and slot, in turn
        under the pool's baton); None without room for them or when no run can have the jobs' shape."""
        from grpo_core.training_api.model import run_config, run_shape
        from grpo_core.training_api.shared import SharedBases

        assert first.spec is not None and first.model_dir is not None
        shape = run_shape(first.spec.cfg.lora)
        if shape is None or self.slots < 2:
            return None
        rank, mlp, attn = shape
        lent = pool.placed(first.spec.cfg)
        folder, name = first.model_dir, first.spec.base_name
        run = run_config(rank, mlp, attn, precision=self.settings.training_precision)  # as the sessions' runs are
        if SharedBases.key(folder, run, name) != SharedBases.key(folder, lent, name):
            log.info("sessions' runs would not fit this pool's resident (its device or precision): it takes none")
            return None
        self.shape = tc.RunShape(rank=rank, train_mlp=mlp, train_attn=attn)
        seat = Seat(SharedBases(), pool.baton, pooled=True, together=works_together(self.settings))
        seat.shared.lend(pool.resident, folder, lent, name)
        return Sessions(self.settings, seat)

    def _fill(self, pool: TurnPool, jobs: JobTenants, sessions: Sessions | None) -> None:
        """Claim jobs that may join this pool while it has room, then sessions whose runs fit its resident; with
        room and nothing claimed, ask again at most every ``FILL_EVERY`` seconds (each ask takes the scheduler's
        fleet lock)."""
        from worker import runner

        def room(job: int, run: int) -> bool:
            """Whether ``job`` more jobs and ``run`` more sessions fit (each session counted as one run)."""
            jobs_then, runs_then = pool.tenants + job, (len(sessions) if sessions is not None else 0) + run
            if runner.shutting_down():
                return False
            if self.planning:  # no second tenant before the memory plan
                return jobs_then + runs_then <= 1
            if self.plan is not None:
                return self.plan.fits(jobs_then, runs_then)
            return jobs_then + runs_then <= self.slots

        if time.monotonic() < self._next_fill:
            return
        while room(1, 0) and jobs.claim(pool):
            pass
        while sessions is not None and room(0, 1):
            client = InternalClient(self.settings.api_url, self.settings.internal_token)
            try:
                if not sessions.claim_more(client, [self.lead_model], self.shape):
                    break
            finally:
                client.close()
            for tenant in jobs.tenants.values():  # how many share the worker, never whose
                held = pool.tenants + len(sessions)
                tenant.reporter.on_message(f"A training-API session now shares this worker: {held} tenants, in turn")
        if room(1, 0) or room(0, 1):
            self._next_fill = time.monotonic() + FILL_EVERY
