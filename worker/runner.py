"""One run of one job: claim -> fetch inputs -> grpo_core.train -> report -> guarantee a terminal state.

Per-run state lives in ``JobRun``; the Celery task is one line. Everything the user sees goes through the
internal API (events, checkpoints, the final status: worker.reporting); the object store is used directly for
bytes. A heartbeat thread renews the lease while a long step runs and picks up a cancel or pause, which the loop
honours between steps. Every failure ends as a finish the user can act on (``_failure``).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tarfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery.exceptions import SoftTimeLimitExceeded
from pydantic import TypeAdapter, ValidationError

from grpo_core.config import GRPOConfig
from grpo_core.data import read_jsonl
from grpo_core.errors import DeviceOutOfMemory, GraderFailed, UserError
from grpo_core.metrics_schema import Execution
from grpo_core.models import resolve_model
from grpo_core.rewards.base import Grader
from grpo_core.rewards.judge import JudgeNotConfigured
from grpo_core.rewards.python_runner import GraderError, SandboxUnavailable
from grpo_core.rewards.schemas import GraderSpec, uses_python
from runtime import internal as api
from runtime.errors import InfrastructureError
from runtime.storage import make_store
from worker.client import InternalClient, StaleLease
from worker.reporting import Reporter
from worker.sandbox_check import python_graders_allowed
from worker.settings import WorkerSettings

if TYPE_CHECKING:
    from grpo_core.trainer import TrainResult

log = logging.getLogger(__name__)


def is_infrastructure(exc: BaseException) -> bool:
    """Failures of what the job runs on (object store, network, disk, the API), which another attempt may not
    meet; the job's own mistakes (UserError, grader errors) and bugs are not retried."""
    if isinstance(exc, InfrastructureError):
        return True
    return isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError | PermissionError)


def is_out_of_memory(exc: BaseException) -> bool:
    """Memory exhaustion outside the trainer's loop (which raises DeviceOutOfMemory with the step and the remedy):
    torch.OutOfMemoryError (GPU), or a RuntimeError from the CPU allocator, which has no class of its own: its
    message is all there is to read."""
    import torch

    if isinstance(exc, MemoryError | torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)


def _release_device_memory() -> None:
    """Hand the run's GPU memory back (this process trains the next job too): the model and optimizer are
    unreachable once ``train`` returned or raised, but the caching allocator keeps their blocks until told."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


_shutting_down = False  # set once by stop_for_shutdown; read at every step boundary


def stop_for_shutdown() -> None:
    """This worker is shutting down (worker.celery_app forwards the warm shutdown to its pool processes): the
    running job, or one that is only starting, stops at the next step boundary, saves a checkpoint and is handed
    back to the queue. Called from a signal handler: it sets a plain flag and nothing else (no lock)."""
    global _shutting_down
    _shutting_down = True


class JobRun:
    def __init__(self, job_id: str, settings: WorkerSettings) -> None:
        self.job_id = job_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store = make_store(settings)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.claim_id = uuid.uuid4().hex  # one per run: a retried claim request gets the same lease
        self.epoch = 0
        self.object_prefix = ""  # the claim's: where this job's objects go
        self.lease_seconds = 600  # the claim's
        # cancel, pause or this worker's shutdown: the loop stops at the next step boundary (first reason wins)
        self.stop_requested = threading.Event()
        self.stop_reason: str | None = None
        self._stop_seen_at = 0.0
        self._done = threading.Event()

    def _request_stop(self, reason: str | None) -> None:
        if reason and not self.stop_requested.is_set():
            self.stop_reason, self._stop_seen_at = reason, time.monotonic()
            self.stop_requested.set()

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
        status = "cancelled" if self.stop_reason == "cancel" else "paused"
        log.error(
            "job %s: step did not end within %s s of the %s request; killing the process",
            self.job_id,
            grace,
            self.stop_reason,
        )
        try:
            warning = f"The current step did not end within {grace} s; stopped by force"
            self.post_events([api.MessageEvent(message=warning, level="warn")])
            self.finish(api.FinishRequest(epoch=self.epoch, status=status))
        finally:
            os._exit(70)

    def run(self) -> None:
        try:
            claim = self.client.claim(self.job_id, self.worker_id, self.claim_id)
        except StaleLease as exc:
            log.info("job %s not claimed: %s", self.job_id, exc)  # a duplicate delivery, or cancelled: nothing to do
            return
        self.epoch, self.object_prefix, self.lease_seconds = claim.epoch, claim.object_prefix, claim.lease_seconds
        beat = threading.Thread(target=self._heartbeat_loop, name=f"heartbeat-{self.job_id}", daemon=True)
        beat.start()
        work = self.settings.scratch_dir / self.job_id / f"e{self.epoch}"
        try:
            self.finish(self._train(claim, work))
        except StaleLease as exc:
            log.warning("job %s: stopped writing, lease is stale: %s", self.job_id, exc)
        finally:
            self._done.set()
            beat.join(timeout=5)
            self.client.close()
            shutil.rmtree(work, ignore_errors=True)

    def _train(self, claim: api.ClaimResponse, work: Path) -> api.FinishRequest:
        """Run training; map every failure to a finish a user can act on."""
        reporter = Reporter(self)
        try:
            result = self._run_training(claim, work, reporter)
        except StaleLease:
            raise
        except Exception as exc:
            return self._failure(exc)
        outcome = api.FinishRequest(epoch=self.epoch, status="succeeded", trained_tokens=reporter.tokens)
        if not result.stopped:
            return outcome
        done = f"{result.steps_done}/{result.total_steps}"
        if self.stop_reason == "pause":
            msg = (
                f"Paused after step {done} (checkpoint saved); "
                "POST /v1/fine_tuning/jobs/{id}/resume continues from it"
            )
            self.post_events([api.MessageEvent(message=msg)])
            return outcome.model_copy(update={"status": "paused"})
        if self.stop_reason == "shutdown":
            log.warning("job %s: handed back at step %s (worker shutting down)", self.job_id, result.steps_done)
            return outcome.model_copy(update={"status": "preempted"})
        self.post_events([api.MessageEvent(message=f"Stopped after step {done} on cancel request")])
        return outcome.model_copy(update={"status": "cancelled"})

    def _failure(self, exc: Exception) -> api.FinishRequest:
        """The failed finish for ``exc``: the job's own mistakes, the operator's limits, infrastructure (retried
        while attempts remain), memory, and bugs each get their code."""

        def failed(code: str, message: str, retryable: bool = False) -> api.FinishRequest:
            return api.FinishRequest(
                epoch=self.epoch, status="failed", error_code=code, error_message=message, retryable=retryable
            )

        if isinstance(exc, GraderFailed | GraderError):
            return failed("grader_error", str(exc))
        if isinstance(exc, DeviceOutOfMemory):  # never retried: the same settings run out the same way
            return failed("out_of_memory", str(exc))  # the trainer's words: step, peak and remedy
        if is_out_of_memory(exc):
            msg = "out of memory: lower group_size, batch_size, micro_batch_size or max_completion_tokens"
            return failed("out_of_memory", msg)
        if isinstance(exc, UserError):
            return failed("invalid_job", str(exc))
        if isinstance(exc, SoftTimeLimitExceeded):  # the operator's per-attempt budget (JOB_TIME_LIMIT_SECONDS)
            limit = self.settings.job_time_limit_seconds
            return failed("time_limit", f"the attempt exceeded this service's {limit} s time limit")
        if is_infrastructure(exc):  # not the job's fault: the API re-queues it while attempts remain
            log.exception("job %s: infrastructure error", self.job_id)
            return failed("infrastructure_error", f"{type(exc).__name__}: {exc}", retryable=True)
        log.exception("job %s crashed", self.job_id)
        return failed("internal_error", f"{type(exc).__name__}: {exc}")

    def _run_training(self, claim: api.ClaimResponse, work: Path, reporter: Reporter) -> TrainResult:

        from grpo_core.device import resolve_placement
        from grpo_core.rewards.graders import build_graders
        from grpo_core.trainer import train

        try:
            cfg = GRPOConfig.model_validate(claim.hyperparameters)
            spec: GraderSpec = TypeAdapter(GraderSpec).validate_python(claim.grader)
        except ValidationError as exc:
            raise UserError(f"job spec is invalid: {exc}") from None
        try:
            model_dir = resolve_model(self.settings.models_dir, claim.model)
        except KeyError as exc:
            raise UserError(f"this worker cannot train it: {exc.args[0]}") from None
        work.mkdir(parents=True, exist_ok=True)
        rows = self._fetch_rows(claim.training_file_key, work / "train.jsonl")
        valid_rows = None
        if claim.validation_file_key:
            valid_rows = self._fetch_rows(claim.validation_file_key, work / "validation.jsonl")
        resume_dir = self._fetch_resume_point(claim.resume, work / "resume")
        placement = resolve_placement(cfg.device, cfg.precision)  # also sets torch's threads to the usable CPUs
        reporter.on_message(
            f"Training {claim.model} with GRPO on {placement.describe()}: {claim.total_steps} steps of "
            f"{cfg.batch_size} prompts × {cfg.group_size} samples"
        )
        if uses_python(spec):
            allowed, why = python_graders_allowed(self.settings.reward_sandbox)
            if not allowed:
                raise UserError(why)
            reporter.on_message(why)
        try:
            graders: list[Grader] = build_graders(spec, self.settings.grader_env())
        except (SandboxUnavailable, JudgeNotConfigured) as exc:
            raise UserError(f"this service cannot run the grader: {exc}") from None
        try:
            return train(
                cfg,
                model_dir,
                rows,
                graders,
                callbacks=reporter,
                work_dir=work / "ckpt",
                seed=claim.seed,
                resume_from=resume_dir,
                valid_rows=valid_rows,
                placement=placement,
            )
        finally:
            for g in graders:
                g.close()
            _release_device_memory()

    def _fetch_rows(self, key: str, dest: Path) -> list[dict[str, Any]]:
        self.store.get_file(key, dest)
        return read_jsonl(dest)

    def _fetch_resume_point(self, resume: api.ResumePoint | None, dest: Path) -> Path | None:
        """Download and unpack the last registered checkpoint (its manifest is checked when it is loaded)."""
        if resume is None:
            return None
        dest.mkdir(parents=True, exist_ok=True)
        tar_path = dest.with_suffix(".tar")
        self.store.get_file(resume.state_key, tar_path)
        with tarfile.open(tar_path) as tar:
            tar.extractall(dest, filter="data")
        return dest
