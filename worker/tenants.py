"""The jobs a pool on this worker trains (grpo_core.pool.TurnPool), as tenants: each claimed with the pool's key, its
lease renewed, its inputs fetched and graders built as JobRun does, seated in the pool, its turns run, its end
reported. A pool of jobs (worker.pool) and a pool of sessions that takes jobs onto its runs' resident base
(worker.training_api.pool) both keep their jobs here."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime import internal as api
from worker.client import StaleLease
from worker.job import check_sandbox, fetch_inputs, make_graders, read_job
from worker.reporting import Reporter
from worker.runner import JobRun
from worker.settings import WorkerSettings
from worker.tracking import check_secrets

if TYPE_CHECKING:
    from grpo_core.pool import TenantSpec, TurnPool
    from grpo_core.rewards.base import Grader
    from grpo_core.schemas.metrics import Execution
    from grpo_core.trainer import TrainResult

log = logging.getLogger(__name__)


class PoolReporter(Reporter):
    """A tenant's Reporter: its execution says it shares the worker, and with how many tenants (not whose)."""

    tenants = 1
    together = False  # its rollouts and updates computed together with the other tenants'

    def on_start(self, execution: Execution) -> None:
        update = {"pool_tenants": self.tenants, "pool_together": self.together}
        super().on_start(execution.model_copy(update=update))


@dataclass
class Tenant:
    """One pooled job on this worker: its run (lease, stop requests), reporter and graders, and once its inputs are
    in, what the pool trains (``spec``) on which base model's folder (``model_dir``)."""

    job: JobRun
    claim: api.ClaimResponse
    reporter: PoolReporter
    graders: list[Grader] = field(default_factory=list)
    spec: TenantSpec | None = None
    model_dir: Path | None = None

    def end(self, outcome: TrainResult | Exception) -> None:
        """Report how the job ended (as JobRun does for a run alone) and free what it held."""
        from grpo_core.trainer import TrainResult

        job, status = self.job, api.FinishStatus.failed
        try:
            finish = job.ended(outcome, self.reporter) if isinstance(outcome, TrainResult) else job.failure(outcome)
            status = finish.status
            job.finish(finish)
        except StaleLease as exc:
            log.warning("job %s: stopped writing, lease is stale: %s", job.job_id, exc)
        except Exception:  # the API is unreachable: the lease expires and the reaper hands the job on
            log.exception("job %s: could not report its end", job.job_id)
        finally:
            self.reporter.finish_tracking(status)
            for g in self.graders:
                g.close()
            job.stop_heartbeat()
            shutil.rmtree(job.work_dir(), ignore_errors=True)


def _together(pool: TurnPool, spec: TenantSpec | None) -> bool:
    """Whether the tenant's rollouts and updates are computed with the other tenants' (grpo_core.pool)."""
    return bool(pool.together) and spec is not None and not spec.cfg.pool_exact


def _sampling(pool: TurnPool, spec: TenantSpec | None) -> str:
    """How the tenant's rollouts and updates run, as its event says it (grpo_core.pool: together or in turn)."""
    if _together(pool, spec):
        return "its rollouts and updates computed together with theirs (equal to alone within rounding)"
    return "exactly as alone"


class JobTenants:
    """The jobs of one pool on this worker, by their index in it (``tenants``); ``doorbell``: what rang this worker
    (named in its logs); ``key``: the pool's (grpo_core.schemas.pooling.pool_key), which every job claimed has."""

    def __init__(self, doorbell: str, settings: WorkerSettings, key: str) -> None:
        self.doorbell, self.settings, self.key = doorbell, settings, key
        self.tenants: dict[int, Tenant] = {}

    def claim(self, pool: TurnPool) -> bool:
        """Claim one more job that may join ``pool`` and seat it (or end it with the reason it cannot train);
        whether one was claimed."""
        claimed = self.next_claim()
        if claimed is not None:
            self.take(pool, *claimed)
        return claimed is not None

    def next_claim(self) -> tuple[JobRun, api.ClaimResponse] | None:
        """The next job with the pool's key, its lease this worker's; None when there is none."""
        job = JobRun(self.doorbell, self.settings)
        claim = job.claim_next(pool=self.key)
        if claim is None:
            job.client.close()
            return None
        return job, claim

    def take(self, pool: TurnPool, job: JobRun, claim: api.ClaimResponse) -> None:
        """Seat a claimed job in ``pool``, or end it with the reason it cannot train."""
        tenant = self.tenant(job, claim)
        if tenant is not None:
            self.add(pool, tenant)

    def round(self, pool: TurnPool) -> None:
        """One turn of every job in ``pool``; those that ended are reported and leave."""
        for index, outcome in pool.round():
            self.tenants.pop(index).end(outcome)

    def end_all(self, exc: Exception) -> None:
        """The pool itself failed: every job ends with it (no lease is left beating)."""
        for left in self.tenants.values():
            left.end(exc)
        self.tenants.clear()

    def abandon(self) -> None:
        """This worker stops training its jobs without an outcome: their leases stop beating, so each expires and
        the reaper hands the job on, to resume from its last checkpoint."""
        for left in self.tenants.values():
            left.job.stop_heartbeat()
            for g in left.graders:
                g.close()
        self.tenants.clear()

    def tenant(self, job: JobRun, claim: api.ClaimResponse) -> Tenant | None:
        """The claimed job's lease renewed, its inputs fetched and graders built (as JobRun does); None when that
        failed it (finished with the reason)."""
        from grpo_core.data.rows import read_jsonl
        from grpo_core.pool import TenantSpec

        job.start_heartbeat()
        tenant = Tenant(job, claim, PoolReporter(job, claim, self.settings))
        try:
            check_secrets(claim)
            spec = read_job(claim, self.settings, job.store, tenant.reporter.on_message)
            inputs = fetch_inputs(job.store, claim, job.work_dir() / "inputs")
            check_sandbox(spec, self.settings, tenant.reporter.on_message)
            tenant.graders = make_graders(spec, self.settings, claim)
        except Exception as exc:  # the job's boundary: it fails with the reason, the pool goes on
            tenant.end(exc)
            return None
        tenant.model_dir = spec.model_dir
        tenant.spec = TenantSpec(
            cfg=spec.cfg,
            rows=read_jsonl(inputs.train),
            graders=tenant.graders,
            callbacks=tenant.reporter,
            work_dir=job.work_dir() / "ckpt",
            seed=claim.seed,
            resume_from=inputs.resume,
            valid_rows=read_jsonl(inputs.validation) if inputs.validation else None,
            base_name=spec.base_name,
            environment=spec.environment,
        )
        return tenant

    def add(self, pool: TurnPool, tenant: Tenant) -> None:
        """Seat the tenant in the pool (its first step waits for its turn), saying that it shares the worker."""
        others = pool.tenants
        tenant.reporter.tenants = others + 1
        tenant.reporter.together = _together(pool, tenant.spec)
        if others:
            tenant.reporter.on_message(
                f"Sharing this worker's resident {tenant.claim.model} with {others} other job(s): each trains its "
                f"own adapter, in turn, {_sampling(pool, tenant.spec)}"
            )
        assert tenant.spec is not None, "a tenant is added once its inputs are in (``tenant``)"
        try:
            index = pool.add(tenant.spec)
        except Exception as exc:  # refused (its layout): it fails alone with the reason
            tenant.end(exc)
            return
        outcome = pool.results[index]
        if isinstance(outcome, Exception):  # its run could not be built (its data, its memory)
            tenant.end(outcome)
            return
        for other in self.tenants.values():  # who shares the worker is visible to each, how many only
            other.reporter.on_message(f"Another job now shares this worker: {pool.tenants} tenants, in turn")
        self.tenants[index] = tenant
