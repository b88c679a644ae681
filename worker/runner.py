"""One run of one job: claim -> fetch inputs -> grpo_core.train -> report -> guarantee a terminal state.

Per-run state lives in ``JobRun``; the Celery task is one line. Everything the user sees goes through the
internal API (events, checkpoints, the final status: worker.reporting); the object store is used directly for
bytes. A heartbeat thread renews the lease while a long step runs and picks up a cancel or pause, which the loop
honours between steps. Every failure ends as a finish the user can act on (``failure``).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_core.schemas.metrics import Execution
from runtime import internal as api
from runtime.storage import make_store
from worker import preflight
from worker.client import InternalClient, StaleLease, worker_id
from worker.failures import classify
from worker.job import Inputs, Job, check_sandbox, fetch_inputs, make_graders, model_cache, read_job
from worker.launch import RankSpec, Torchrun, free_port
from worker.reporting import Reporter
from worker.settings import WorkerSettings
from worker.tracking import check_secrets

if TYPE_CHECKING:
    from grpo_core.trainer import TrainResult

log = logging.getLogger(__name__)


_shutting_down = False  # set once by stop_for_shutdown; read at every step boundary


def stop_for_shutdown() -> None:
    """This worker is shutting down (worker.celery_app forwards the warm shutdown to its pool processes): the
    running job, or one that is only starting, stops at the next step boundary, saves a checkpoint and is handed
    back to the queue. Called from a signal handler: it sets a plain flag and nothing else (no lock)."""
    global _shutting_down
    _shutting_down = True


def shutting_down() -> bool:
    """Whether this worker was told to shut down (``stop_for_shutdown``): a pool claims no more jobs then."""
    return _shutting_down


def offered_devices(settings: WorkerSettings) -> int | None:
    """The devices this worker offers a job: WORKER_DEVICES, else its GPUs; None on a CPU worker (a job's ranks
    are processes there, bounded by the API's MAX_DEVICES_PER_NODE)."""
    if settings.worker_devices is not None:
        return settings.worker_devices
    import torch

    return torch.cuda.device_count() or None


class JobRun:
    def __init__(self, job_id: str, settings: WorkerSettings) -> None:
        self.job_id = job_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store = make_store(settings)
        self.worker_id = worker_id()
        self.claim_id = uuid.uuid4().hex  # one per run: a retried claim request gets the same lease
        self.epoch = 0
        self.object_prefix = ""  # the claim's: where this job's objects go
        self.lease_seconds = 600  # the claim's
        # cancel, pause or this worker's shutdown: the loop stops at the next step boundary (first reason wins)
        self.stop_requested = threading.Event()
        self.stop_reason: str | None = None
        self._stop_seen_at = 0.0
        self._done = threading.Event()
        self._ranks: Torchrun | None = None  # this node's torchrun while a multi-process job runs
        self._finish_lock = threading.Lock()
        self._forced = False  # _enforce_grace took over the run's outcome
        self._beat: threading.Thread | None = None

    def _request_stop(self, reason: str | None) -> None:
        if reason and not self.stop_requested.is_set():
            self.stop_reason, self._stop_seen_at = reason, time.monotonic()
            self.stop_requested.set()
            ranks = self._ranks
            if ranks is not None:  # a multi-process job: its rank 0 reads the stop file before every step
                ranks.request_stop(reason)

    def should_stop(self) -> bool:
        """Checked by the loop before every step."""
        if _shutting_down:
            self._request_stop("shutdown")  # unless a cancel or pause came first
        return self.stop_requested.is_set()

    def post_events(self, events: list[api.EventIn]) -> None:
        self._request_stop(self.client.events(self.job_id, self.epoch, events))

    def post_execution(self, execution: Execution) -> None:
        self._request_stop(self.client.execution(self.job_id, self.epoch, execution))

    def finish(self, outcome: api.FinishRequest) -> None:
        """Report how the run ended, once: a stop by force (``_enforce_grace``, on the heartbeat thread) reports
        its own outcome and ends the process, and the training thread's outcome (the ranks it killed look
        lost) must not be reported before or after it."""
        with self._finish_lock:
            if self._forced:
                return
            self.client.finish(self.job_id, outcome)

    def _heartbeat_loop(self) -> None:
        interval = min(30.0, max(1.0, self.lease_seconds / 4))
        while not self._done.wait(interval):
            try:
                self._request_stop(self.client.heartbeat(self.job_id, self.epoch).stop)
            except StaleLease:
                log.warning("job %s: lease lost; stopping", self.job_id)
                self._request_stop("lease_lost")
                return
            except Exception:  # a missed beat is not fatal; the lease outlives several intervals
                log.exception("heartbeat failed for %s", self.job_id)
            self._enforce_grace()

    def _enforce_grace(self) -> None:
        """A cancel or pause the loop has not honoured within the grace period (a stuck step): record the
        outcome and end this process; Celery's parent replaces it and the redelivered message finds nothing to
        claim. The last checkpoint is kept, so a paused job loses only the unfinished step."""
        grace = self.settings.stop_grace_seconds
        if self.stop_reason not in ("cancel", "pause") or time.monotonic() - self._stop_seen_at < grace:
            return
        status = api.FinishStatus.cancelled if self.stop_reason == "cancel" else api.FinishStatus.paused
        log.error(
            "job %s: step did not end within %s s of the %s request; killing the process",
            self.job_id,
            grace,
            self.stop_reason,
        )
        self._finish_lock.acquire()  # held until the process ends: no other outcome is reported
        self._forced = True
        try:
            ranks = self._ranks
            if ranks is not None:
                ranks.kill(grace=5)
            warning = f"The current step did not end within {grace} s; stopped by force"
            self.post_events([api.MessageEvent(message=warning, level="warn")])
            self.client.finish(self.job_id, api.FinishRequest(epoch=self.epoch, status=status))
        finally:
            os._exit(70)

    def run(self) -> None:
        """Ask the API for the next job this worker can run (the doorbell's job id only names what rang) and
        train it; nothing claimable (another worker took it, its project is at its limit, it waits on a backoff)
        ends the run quietly."""
        claim = self.claim_next()
        if claim is not None:
            self.serve(claim)

    def claim_next(self, pool: str | None = None) -> api.ClaimResponse | None:
        """The next job this worker can run (with ``pool``: one that may join the pool with that key), its lease
        now this run's; None when there is none."""
        ask = api.ClaimNextRequest(
            worker_id=self.worker_id,
            claim_id=self.claim_id,
            devices=offered_devices(self.settings),
            nodes=self.settings.worker_nodes,
            pool=pool,
        )
        try:
            claim = self.client.claim_next(ask)
        except StaleLease as exc:
            log.info("doorbell %s: nothing claimed: %s", self.job_id, exc)
            return None
        if claim is None:  # a pool asks every few seconds while it has room: that is no news
            log.log(
                logging.DEBUG if pool else logging.INFO, "doorbell %s: nothing this worker can run now", self.job_id
            )
            return None
        self.job_id = claim.job_id
        self.epoch, self.object_prefix, self.lease_seconds = claim.epoch, claim.object_prefix, claim.lease_seconds
        return claim

    def serve(self, claim: api.ClaimResponse) -> None:
        """Train the claimed job on a worker of its own, renewing its lease, and report how it ended."""
        self.start_heartbeat()
        work = self.work_dir()
        try:
            self.finish(self._train(claim, work))
        except StaleLease as exc:
            log.warning("job %s: stopped writing, lease is stale: %s", self.job_id, exc)
        finally:
            self.stop_heartbeat()
            shutil.rmtree(work, ignore_errors=True)
            model_cache(self.settings).release_all()  # the base model may be evicted now

    def work_dir(self) -> Path:
        return self.settings.scratch_dir / self.job_id / f"e{self.epoch}"

    def start_heartbeat(self) -> None:
        beat = threading.Thread(target=self._heartbeat_loop, name=f"heartbeat-{self.job_id}", daemon=True)
        self._beat = beat
        beat.start()

    def stop_heartbeat(self) -> None:
        """The run is over: the heartbeat ends and the API client closes."""
        self._done.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        self.client.close()

    def _train(self, claim: api.ClaimResponse, work: Path) -> api.FinishRequest:
        """Run training; map every failure to a finish a user can act on."""
        reporter = Reporter(self, claim, self.settings)
        status = api.FinishStatus.failed
        try:
            outcome = self._outcome(claim, work, reporter)
            status = outcome.status
            return outcome
        finally:  # also on a stale lease: an open W&B/MLflow run must never carry over to the next job
            reporter.finish_tracking(status)

    def _outcome(self, claim: api.ClaimResponse, work: Path, reporter: Reporter) -> api.FinishRequest:
        try:
            result = self._run_training(claim, work, reporter)
        except StaleLease:
            raise
        except Exception as exc:  # the run's boundary: whatever training raised, the job finishes failed, saying why
            return self.failure(exc)
        return self.ended(result, reporter)

    def ended(self, result: TrainResult, reporter: Reporter) -> api.FinishRequest:
        """The finish of a run that returned ``result``: succeeded, or paused, handed back or cancelled when it
        stopped early (each said in an event)."""
        outcome = api.FinishRequest(epoch=self.epoch, status=api.FinishStatus.succeeded, trained_tokens=reporter.tokens)
        if not result.stopped:
            return outcome
        done = f"{result.steps_done}/{result.total_steps}"
        if self.stop_reason == "pause":
            msg = (
                f"Paused after step {done} (checkpoint saved); "
                "POST /v1/fine_tuning/jobs/{id}/resume continues from it"
            )
            self.post_events([api.MessageEvent(message=msg)])
            return outcome.model_copy(update={"status": api.FinishStatus.paused})
        if self.stop_reason in ("shutdown", "preempt"):
            why = "worker shutting down" if self.stop_reason == "shutdown" else "preempted for a higher-priority job"
            log.warning("job %s: handed back at step %s (%s)", self.job_id, result.steps_done, why)
            return outcome.model_copy(update={"status": api.FinishStatus.preempted})
        self.post_events([api.MessageEvent(message=f"Stopped after step {done} on cancel request")])
        return outcome.model_copy(update={"status": api.FinishStatus.cancelled})

    def failure(self, exc: Exception) -> api.FinishRequest:
        """The failed finish for ``exc`` (worker.failures.classify)."""
        failure = classify(exc, self.job_id, self.settings.job_time_limit_seconds)
        return api.FinishRequest(
            epoch=self.epoch,
            status=api.FinishStatus.failed,
            error_code=failure.code,
            error_message=failure.message,
            retryable=failure.retryable,
        )

    def _run_training(self, claim: api.ClaimResponse, work: Path, reporter: Reporter) -> TrainResult:
        check_secrets(claim)  # a secret named but not carried fails the job now, saying which
        job = read_job(claim, self.settings, self.store, reporter.on_message)
        inputs = fetch_inputs(self.store, claim, work / "inputs")
        pre = job.cfg.preflight
        if pre is not None:
            from grpo_core.trainer import TrainResult

            check_sandbox(job, self.settings, lambda _: None)  # refuses here; says which tier once, below
            job = preflight.before_training(claim, job, inputs, self.settings, self.post_readiness, reporter.on_message)
            if pre.only:
                return TrainResult(0, 0, False, None)
        result = self._train_job(claim, job, inputs, work, reporter)
        if pre is not None and pre.compare_after and not result.stopped:
            if result.final_checkpoint is None:
                reporter.on_message("The readiness probe after training runs for single-process jobs only (for now)")
            else:
                try:
                    preflight.after_training(
                        claim,
                        job,
                        inputs,
                        self.settings,
                        result.final_checkpoint,
                        self.post_readiness,
                        reporter.on_message,
                    )
                except StaleLease:
                    raise
                except Exception as exc:  # the model is trained and registered: the comparison is a bonus
                    log.exception("job %s: readiness probe after training failed", self.job_id)
                    reporter.on_message(
                        f"The readiness probe after training failed ({type(exc).__name__}: {exc}); the trained "
                        "model is not affected",
                        "warn",
                    )
        return result

    def post_readiness(self, body: api.ReadinessRequest) -> None:
        self._request_stop(self.client.readiness(self.job_id, body))

    def _train_job(
        self, claim: api.ClaimResponse, job: Job, inputs: Inputs, work: Path, reporter: Reporter
    ) -> TrainResult:
        res = claim.resources
        if res.world_size > 1:
            return self._run_ranks(claim, job, inputs, work / "ranks", reporter)

        from grpo_core.data.rows import read_jsonl
        from grpo_core.hardware.device import release_device_memory, resolve_placement
        from grpo_core.hardware.rollout_placement import DeviceSplit
        from grpo_core.trainer import train

        placement = resolve_placement(job.cfg.device, job.cfg.precision)  # also sets torch's threads
        reporter.on_message(
            f"Training {claim.model} with GRPO on {placement.describe()}: {claim.total_steps} steps of "
            f"{job.cfg.batch_size} prompts × {job.cfg.group_size} samples"
        )
        check_sandbox(job, self.settings, reporter.on_message)
        graders = make_graders(job, self.settings, claim)
        try:
            return train(
                job.cfg,
                job.model_dir,
                read_jsonl(inputs.train),
                graders,
                callbacks=reporter,
                work_dir=work / "ckpt",
                seed=claim.seed,
                resume_from=inputs.resume,
                valid_rows=read_jsonl(inputs.validation) if inputs.validation else None,
                placement=placement,
                base_name=job.base_name,
                environment=job.environment,
                sandbox_tier=self.settings.reward_sandbox,
                split=DeviceSplit(res.devices, res.rollout_devices) if res.rollout_devices else None,
            )
        finally:
            for g in graders:
                g.close()
            release_device_memory()  # this process trains the next job: the model's memory goes back now

    def _run_ranks(
        self, claim: api.ClaimResponse, job: Job, inputs: Inputs, folder: Path, reporter: Reporter
    ) -> TrainResult:
        """A job on several devices or nodes: this node's torchrun (worker.launch), watched from here.

        This process keeps the lease (its heartbeat thread runs on) and turns what it hears into the stop file:
        a cancel or pause, or this worker's shutdown. Rank 0 reports everything else itself. For several nodes
        the rendezvous endpoint is published first, and the API rings the other nodes' join doorbells."""
        from grpo_core.trainer import TrainResult

        res = claim.resources
        single = res.nodes == 1
        host = "127.0.0.1" if single else self.settings.rendezvous_host()
        master = (host, free_port("127.0.0.1" if single else "0.0.0.0"))  # other nodes connect
        layout = f"{res.nodes} node{'s' * (res.nodes > 1)} × {res.ranks_per_node}"
        where = f"{res.world_size} ranks ({layout}) under torchrun"
        reporter.on_message(
            f"Training {claim.model} with GRPO on {where}: {claim.total_steps} steps of "
            f"{job.cfg.batch_size} prompts × {job.cfg.group_size} samples"
        )
        check_sandbox(job, self.settings, reporter.on_message)
        if not single:
            self._request_stop(self.client.rendezvous(self.job_id, self.epoch, f"{host}:{master[1]}"))
        spec = RankSpec(claim=claim, job=job, node_rank=0, inputs=inputs, folder=folder)
        ranks = Torchrun(spec, master, self.settings.rendezvous_timeout_seconds)
        self._ranks = ranks
        try:
            ranks.start()
            if self.stop_reason:
                ranks.request_stop(self.stop_reason)
            ranks.wait(tick=self.should_stop)
            result = ranks.outcome()
        finally:
            self._ranks = None
            ranks.kill()
        assert result is not None, "node 0 ran rank 0, which writes the result"
        self.stop_reason = self.stop_reason or result.stop_reason
        reporter.tokens = result.trained_tokens
        return TrainResult(result.steps_done, result.total_steps, result.stopped, None)
