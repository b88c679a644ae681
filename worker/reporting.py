"""How a running job reports: grpo_core.run.Callbacks over the internal API and the object store.

Events (messages, per-step metrics) are posted to the API; the answer says whether the user asked the job to
stop. A checkpoint is uploaded to the store under the run's epoch-scoped keys (runtime.keys), adapter tar and
full state tar (worker.checkpoints), and then registered with the API: the registration is the commit point, so an
upload whose worker died before registering it is garbage the next attempt deletes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from grpo_core.schemas.metrics import Execution, Level, StepMetrics
from runtime import internal as api
from runtime.keys import checkpoint_keys
from runtime.storage import ObjectStore
from worker.checkpoints import pack_adapter, pack_checkpoint, upload
from worker.client import InternalClient
from worker.settings import WorkerSettings
from worker.tracking import Tracker, tracker_for


class ReportTarget(Protocol):
    """The run a Reporter reports for: the worker's own JobRun, or rank 0's link in a multi-process job."""

    job_id: str
    epoch: int
    object_prefix: str
    client: InternalClient
    store: ObjectStore

    def post_events(self, events: list[api.EventIn]) -> None: ...

    def post_execution(self, execution: Execution) -> None: ...

    def should_stop(self) -> bool: ...


class Reporter:
    """grpo_core.run.Callbacks for one run: everything it is told goes to the API, the bytes to the store."""

    def __init__(
        self, run: ReportTarget, claim: api.ClaimResponse | None = None, settings: WorkerSettings | None = None
    ) -> None:
        """``claim`` and ``settings``: the job's and the worker's, to mirror the metrics to W&B or MLflow when the
        job or the operator asks (worker.tracking)."""
        self.run = run
        self.tokens = 0
        self.tracker: Tracker | None = None
        if claim is not None and settings is not None:
            self.tracker = tracker_for(claim, settings, self.on_message)

    def on_message(self, message: str, level: Level = "info") -> None:
        self.run.post_events([api.MessageEvent(message=message, level=level)])

    def on_start(self, execution: Execution) -> None:
        """The job object shows where it trains (and the answer, like a heartbeat's, may ask it to stop)."""
        self.run.post_execution(execution)
        self.on_message(execution.message())
        if self.tracker is not None:
            self.tracker.start()

    def on_step(self, metrics: StepMetrics) -> None:
        self.tokens += metrics.tokens
        self.run.post_events([api.MetricsEvent.of(metrics)])
        if self.tracker is not None:
            self.tracker.step(metrics)

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        """Upload the adapter tar and the full checkpoint, then register them (the commit point)."""
        run = self.run
        adapter_key, state_key = checkpoint_keys(run.object_prefix, step, run.epoch)
        upload(run.store, adapter_key, path, pack_adapter)
        upload(run.store, state_key, path, pack_checkpoint)
        if best:
            msg = f"New best validation reward {metrics.scores.valid_reward_mean:.4f} at step {step}"
            run.post_events([api.MessageEvent(message=msg, step=step)])
        body = api.CheckpointRequest(
            epoch=run.epoch,
            step_number=step,
            object_key=adapter_key,
            state_key=state_key,
            metrics=metrics.summary(),
        )
        run.client.checkpoint(run.job_id, body)
        if self.tracker is not None:
            self.tracker.checkpoint(step, adapter_key, final=final)

    def finish_tracking(self, status: api.FinishStatus) -> None:
        """Close the W&B/MLflow runs with how the job ended (a no-op without tracking)."""
        if self.tracker is not None:
            self.tracker.finish(status)
            self.tracker = None

    def should_stop(self) -> bool:
        return self.run.should_stop()
