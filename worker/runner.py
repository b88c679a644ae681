"""One run of one job: claim -> fetch inputs -> grpo_core.train -> report -> guarantee a terminal state.

Per-run state lives in ``JobRun``; the Celery task is one line. Everything the user sees goes through the
internal API (events, checkpoints, the final status); the object store is used directly for bytes. A heartbeat
thread renews the lease while a long step runs and picks up cancellation, which the loop honours between steps.
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
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from pydantic import TypeAdapter, ValidationError

from api.settings import Settings
from api.storage import make_store
from grpo_core.config import GRPOConfig
from grpo_core.errors import GraderFailed, UserError
from grpo_core.models import resolve_model
from grpo_core.rewards.python_runner import GraderError
from grpo_core.rewards.schemas import GraderSpec
from worker.client import InternalClient, StaleLease
from worker.sandbox_check import python_graders_allowed

log = logging.getLogger(__name__)


def _metrics_message(m: dict[str, Any]) -> str:
    valid = f", validation mean reward={m['valid_reward_mean']:.3f}" if m.get("valid_reward_mean") is not None else ""
    return (
        f"Step {m['step']}/{m['total_steps']}: train mean reward={m['train_reward_mean']:.3f}{valid}, "
        f"loss={m['loss']:.4f}, completion length={m['completion_length_mean']:.1f}, "
        f"{m['timing']['full_iteration']:.1f}s"
    )


def metrics_event(m: dict[str, Any]) -> dict[str, Any]:
    """A per-step metrics event in OpenAI's shape (``data.step``, ``data.scores``, ``data.timing``) plus ours."""
    graders = [{"name": n, **g} for n, g in m["graders"].items()]
    scores = {"train_reward_mean": m["train_reward_mean"], "graders": graders}
    for k in ("valid_reward_mean", "valid_pass_at_k"):
        if m.get(k) is not None:
            scores[k] = m[k]
    errors = {
        "graders": [
            {"name": n, "train_error_rate": g["error_rate"]} for n, g in m["graders"].items() if "error_rate" in g
        ],
        "samples": m["grader_errors"],
    }
    data = {
        "step": m["step"],
        "total_steps": m["total_steps"],
        "scores": scores,
        "errors": errors,
        "timing": {"step": m["timing"]},
        **{
            k: m[k]
            for k in (
                "train_reward_std",
                "frac_reward_zero_std",
                "loss",
                "kl",
                "clip_ratio",
                "clip_ratio_low",
                "clip_ratio_high",
                "entropy",
                "tokens_per_second",
                "grad_norm",
                "learning_rate",
                "completion_length_mean",
                "completion_length_min",
                "completion_length_max",
                "overlong_penalty_mean",
                "advantage_mean",
                "advantage_std",
                "truncated_ratio",
                "tokens",
                "samples",
                "grader_errors",
                "warnings",
                "sampling",
            )
        },
        # only with a separate sampling engine (vLLM): its log-prob mismatch and the TIS weight
        **{k: m[k] for k in ("importance_sampling_ratio_mean", "sampling_logp_difference_max") if k in m},
    }
    return {"type": "metrics", "step": m["step"], "message": _metrics_message(m), "data": data}


def pack_adapter(ckpt_dir: Path, dest: Path) -> Path:
    """Tar of the files ``PeftModel.from_pretrained`` needs: what users download."""
    from grpo_core.checkpoint import ADAPTER_FILES

    with tarfile.open(dest, "w") as tar:
        for name in ADAPTER_FILES:
            tar.add(ckpt_dir / name, arcname=name)
    return dest


def pack_checkpoint(ckpt_dir: Path, dest: Path) -> Path:
    """Tar of the whole checkpoint folder (adapter, training state, manifest): what an exact resume needs."""
    with tarfile.open(dest, "w") as tar:
        for f in sorted(ckpt_dir.iterdir()):
            if f.is_file() and not f.name.startswith("."):
                tar.add(f, arcname=f.name)
    return dest


def _uses_python(spec: Any) -> bool:
    """Whether a grader spec runs user Python (itself or as a multi's part)."""
    parts = getattr(spec, "graders", None)
    return spec.type == "python" or (isinstance(parts, dict) and any(p.type == "python" for p in parts.values()))


def _is_infrastructure(exc: BaseException) -> bool:
    """Failures of what the job runs on (object store, network, disk, the API), which another attempt may not
    meet; the job's own mistakes (UserError, grader errors) and bugs are not retried."""
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"BotoCoreError", "ClientError", "TransportError", "InternalApiError", "ConnectionError"}) or (
        isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError | PermissionError)
    )


def _is_oom(exc: BaseException) -> bool:
    """torch reports memory exhaustion as torch.OutOfMemoryError (GPU) or a RuntimeError from the CPU allocator."""
    return (
        isinstance(exc, MemoryError)
        or type(exc).__name__ == "OutOfMemoryError"
        or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))
    )


class _Callbacks:
    """grpo_core.trainer.Callbacks implemented over the internal API and the object store."""

    def __init__(self, run: JobRun) -> None:
        self.run = run
        self.tokens = 0

    def on_message(self, message: str, level: str = "info") -> None:
        self.run.post_events([{"message": message, "level": level}])

    def on_step(self, metrics: dict[str, Any]) -> None:
        self.tokens += int(metrics.get("tokens", 0))
        self.run.post_events([metrics_event(metrics)])

    def on_checkpoint(self, step: int, path: Path, metrics: dict[str, Any], final: bool) -> None:
        """Upload the adapter tar and the full checkpoint, then register them (the commit point)."""
        prefix = f"{self.run.object_prefix}checkpoints/step-{step:06d}-e{self.run.epoch}"
        for key, tar in (
            (f"{prefix}.tar", pack_adapter(path, path.with_suffix(".tar"))),
            (f"{prefix}.ckpt.tar", pack_checkpoint(path, path.with_suffix(".ckpt.tar"))),
        ):
            self.run.store.put_file(key, tar)
            tar.unlink()
        keys = ("step", "train_reward_mean", "valid_reward_mean", "loss", "kl", "completion_length_mean")
        summary = {k: metrics.get(k) for k in keys}
        if metrics.get("best"):
            msg = f"New best validation reward {metrics['valid_reward_mean']:.4f} at step {step}"
            self.run.post_events([{"message": msg, "step": step}])
        self.run.client.checkpoint(
            self.run.job_id, self.run.epoch, step, f"{prefix}.tar", f"{prefix}.ckpt.tar", summary
        )

    def should_stop(self) -> bool:
        if _shutting_down:
            self.run._request_stop("shutdown")  # unless a cancel or pause came first
        return self.run.stop_requested.is_set()


_shutting_down = False  # set once by stop_for_shutdown; read at every step boundary


def stop_for_shutdown() -> None:
    """This worker is shutting down (worker.celery_app forwards the warm shutdown to its pool processes): the
    running job, or one that is only starting, stops at the next step boundary, saves a checkpoint and is handed
    back to the queue. Called from a signal handler: it sets a plain flag and nothing else (no lock)."""
    global _shutting_down
    _shutting_down = True


class JobRun:
    def __init__(self, job_id: str, settings: Settings) -> None:
        self.job_id = job_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store = make_store(settings)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.claim_id = uuid.uuid4().hex  # one per run: a retried claim request gets the same lease
        self.epoch = 0
        self.object_prefix = f"jobs/{job_id}/"  # replaced by the claim's (per project); this is the pre-tenant layout
        # cancel, pause or this worker's shutdown: the loop stops at the next step boundary (first reason wins)
        self.stop_requested = threading.Event()
        self.stop_reason: str | None = None
        self._stop_seen_at = 0.0
        self._done = threading.Event()

    def _request_stop(self, reason: str | None) -> None:
        if reason and not self.stop_requested.is_set():
            self.stop_reason, self._stop_seen_at = reason, time.monotonic()
            self.stop_requested.set()

    def post_events(self, events: list[dict[str, Any]]) -> None:
        self._request_stop(self.client.events(self.job_id, self.epoch, events))

    def _heartbeat_loop(self) -> None:
        interval = min(30.0, max(1.0, self.settings.lease_seconds / 4))
        while not self._done.wait(interval):
            try:
                self._request_stop(self.client.heartbeat(self.job_id, self.epoch).get("stop"))
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
            self.post_events(
                [{"message": f"The current step did not end within {grace} s; stopped by force", "level": "warn"}]
            )
            self.client.finish(self.job_id, self.epoch, status)
        finally:
            os._exit(70)

    def run(self) -> None:
        try:
            claim = self.client.claim(self.job_id, self.worker_id, self.claim_id)
        except StaleLease as exc:
            log.info("job %s not claimed: %s", self.job_id, exc)  # a duplicate delivery, or cancelled: nothing to do
            return
        self.epoch = claim["epoch"]
        self.object_prefix = claim.get("object_prefix") or self.object_prefix  # an older API sends none
        beat = threading.Thread(target=self._heartbeat_loop, name=f"heartbeat-{self.job_id}", daemon=True)
        beat.start()
        work = self.settings.scratch_dir / self.job_id / f"e{self.epoch}"
        try:
            status, extra = self._train(claim, work)
            self.client.finish(self.job_id, self.epoch, status, **extra)
        except StaleLease as exc:
            log.warning("job %s: stopped writing, lease is stale: %s", self.job_id, exc)
        finally:
            self._done.set()
            beat.join(timeout=5)
            self.client.close()
            shutil.rmtree(work, ignore_errors=True)

    def _train(self, claim: dict[str, Any], work: Path) -> tuple[str, dict[str, Any]]:
        """Run training; map every failure to (status, error fields) a user can act on."""
        callbacks = _Callbacks(self)
        try:
            result = self._run_training(claim, work, callbacks)
        except StaleLease:
            raise
        except GraderFailed as exc:
            return "failed", {"error_code": "grader_error", "error_message": str(exc)}
        except SoftTimeLimitExceeded:  # the operator's per-attempt budget (JOB_TIME_LIMIT_SECONDS)
            limit = self.settings.job_time_limit_seconds
            return "failed", {
                "error_code": "time_limit",
                "error_message": f"the attempt exceeded this service's {limit} s time limit",
            }
        except UserError as exc:
            return "failed", {"error_code": "invalid_job", "error_message": str(exc)}
        except GraderError as exc:
            return "failed", {"error_code": "grader_error", "error_message": str(exc)}
        except Exception as exc:
            if _is_infrastructure(exc):  # not the job's fault: the API re-queues it while attempts remain
                log.exception("job %s: infrastructure error", self.job_id)
                return "failed", {
                    "error_code": "infrastructure_error",
                    "error_message": f"{type(exc).__name__}: {exc}",
                    "retryable": True,
                }
            if not _is_oom(exc):
                log.exception("job %s crashed", self.job_id)
                return "failed", {"error_code": "internal_error", "error_message": f"{type(exc).__name__}: {exc}"}
            return "failed", {
                "error_code": "out_of_memory",
                "error_message": "out of memory: lower group_size, batch_size, micro_batch_size or "
                "max_completion_tokens",
            }
        if result.stopped and self.stop_reason == "pause":
            msg = (
                f"Paused after step {result.steps_done}/{result.total_steps} (checkpoint saved); "
                "POST /v1/fine_tuning/jobs/{id}/resume continues from it"
            )
            self.post_events([{"message": msg}])
            return "paused", {"trained_tokens": callbacks.tokens}
        if result.stopped and self.stop_reason == "shutdown":
            log.warning("job %s: handed back at step %s (worker shutting down)", self.job_id, result.steps_done)
            return "preempted", {"trained_tokens": callbacks.tokens}
        if result.stopped:
            msg = f"Stopped after step {result.steps_done}/{result.total_steps} on cancel request"
            self.post_events([{"message": msg}])
            return "cancelled", {"trained_tokens": callbacks.tokens}
        return "succeeded", {"trained_tokens": callbacks.tokens}

    def _run_training(self, claim: dict[str, Any], work: Path, callbacks: _Callbacks):  # type: ignore[no-untyped-def]
        import torch

        from grpo_core.data import read_jsonl
        from grpo_core.rewards.graders import build_graders
        from grpo_core.rewards.judge import JudgeNotConfigured
        from grpo_core.rewards.python_runner import SandboxUnavailable
        from grpo_core.trainer import train

        try:
            cfg = GRPOConfig.model_validate(claim["hyperparameters"])
            spec = TypeAdapter(GraderSpec).validate_python(claim["grader"])
        except ValidationError as exc:
            raise UserError(f"job spec is invalid: {exc}") from None
        try:
            model_dir = resolve_model(self.settings.models_dir, claim["model"])
        except KeyError as exc:
            raise UserError(f"this worker cannot train it: {exc.args[0]}") from None
        work.mkdir(parents=True, exist_ok=True)
        data = work / "train.jsonl"
        self.store.get_file(claim["training_file_key"], data)
        rows = read_jsonl(data)
        valid_rows = None
        if claim.get("validation_file_key"):
            self.store.get_file(claim["validation_file_key"], work / "validation.jsonl")
            valid_rows = read_jsonl(work / "validation.jsonl")
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        resume_dir = self._fetch_resume_point(claim.get("resume"), work / "resume")
        msg = (
            f"Training {claim['model']} with GRPO: {claim['total_steps']} steps of "
            f"{cfg.batch_size} prompts × {cfg.group_size} samples"
        )
        callbacks.on_message(msg)
        if _uses_python(spec):
            allowed, why = python_graders_allowed(self.settings.reward_sandbox)
            if not allowed:
                raise UserError(why)
            callbacks.on_message(why)
        try:
            graders = build_graders(spec, self.settings.grader_env())
        except (SandboxUnavailable, JudgeNotConfigured) as exc:
            raise UserError(f"this service cannot run the grader: {exc}") from None
        try:
            return train(
                cfg,
                model_dir,
                rows,
                graders,
                callbacks=callbacks,
                work_dir=work / "ckpt",
                seed=claim["seed"],
                resume_from=resume_dir,
                valid_rows=valid_rows,
            )
        finally:
            for g in graders:
                g.close()

    def _fetch_resume_point(self, resume: dict[str, Any] | None, dest: Path) -> Path | None:
        """Download and unpack the last registered checkpoint (its manifest is checked when it is loaded)."""
        if not resume:
            return None
        dest.mkdir(parents=True, exist_ok=True)
        tar_path = dest.with_suffix(".tar")
        self.store.get_file(resume["state_key"], tar_path)
        with tarfile.open(tar_path) as tar:
            tar.extractall(dest, filter="data")
        return dest
