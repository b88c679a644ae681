"""One rank of a multi-process job, as torchrun starts it: ``python -m worker.rank SPEC_JSON``.

Every rank reads the node's ``spec.json`` (worker.launch.RankSpec), builds the graders (each rank scores its share
of the samples) and runs ``grpo_core.trainer.train`` in the process group torchrun describes. Rank 0 alone
reports: its callbacks are the same ``Reporter`` the in-process path uses, over its own internal-API client and
object store (fenced by the claim's epoch, like every write of the attempt); it stops at the next step boundary
when an answer asks it to (cancel, pause) or when its worker wrote the stop file (the heartbeat saw a stop, or
the worker is shutting down). Any exception becomes the rank's failure file, read by the launching worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from grpo_core.hardware.distributed import World
from grpo_core.schemas.metrics import Execution, Level, StepMetrics
from grpo_core.trainer import TrainResult, train
from runtime import internal as api
from runtime.storage import ObjectStore, make_store
from worker.client import InternalClient, StaleLease
from worker.failures import PEER_LOST, Failure, classify
from worker.job import make_graders
from worker.launch import RankFailure, RankResult, RankSpec
from worker.reporting import Reporter
from worker.settings import WorkerSettings, get_settings

log = logging.getLogger("worker.rank")


class RankLink:
    """What rank 0's Reporter talks through (worker.reporting.ReportTarget): the internal API and the store."""

    def __init__(self, spec: RankSpec, settings: WorkerSettings) -> None:
        self.job_id = spec.claim.job_id
        self.epoch = spec.claim.epoch
        self.object_prefix = spec.claim.object_prefix
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store: ObjectStore = make_store(settings)
        self.stop_file = spec.stop_file
        self.stop_reason: str | None = None

    def post_events(self, events: list[api.EventIn]) -> None:
        self.stop_reason = self.stop_reason or self.client.events(self.job_id, self.epoch, events)

    def post_execution(self, execution: Execution) -> None:
        self.stop_reason = self.stop_reason or self.client.execution(self.job_id, self.epoch, execution)

    def should_stop(self) -> bool:
        if self.stop_reason is None and self.stop_file.is_file():
            self.stop_reason = self.stop_file.read_text().strip() or "shutdown"
        return self.stop_reason is not None


class Silent:
    """The callbacks of ranks other than 0: the trainer reports through rank 0 alone and asks only it whether to
    stop, so these are never heard."""

    def on_message(self, message: str, level: Level = "info") -> None:
        pass

    def on_start(self, execution: Execution) -> None:
        pass

    def on_step(self, metrics: StepMetrics) -> None:
        pass

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        pass

    def should_stop(self) -> bool:
        return False


def run_rank(spec: RankSpec, world: World, settings: WorkerSettings) -> RankResult | None:
    """Train this rank's part; rank 0 returns its account of the run."""
    from grpo_core.data.rows import read_jsonl
    from grpo_core.hardware.device import resolve_placement

    job = spec.job
    rows = read_jsonl(spec.inputs.train)
    valid_rows = read_jsonl(spec.inputs.validation) if spec.inputs.validation else None
    graders = make_graders(job, settings, spec.claim)
    link = RankLink(spec, settings) if world.is_main else None
    reporter = Reporter(link, spec.claim, settings) if link is not None else None
    status = api.FinishStatus.failed
    try:
        result: TrainResult = train(
            job.cfg,
            job.model_dir,
            rows,
            graders,
            callbacks=reporter or Silent(),
            work_dir=spec.checkpoints,
            seed=spec.claim.seed,
            resume_from=spec.inputs.resume,
            valid_rows=valid_rows,
            placement=resolve_placement(job.cfg.device, job.cfg.precision, world),
            world=world,
            base_name=job.base_name,
            environment=job.environment,
            sandbox_tier=settings.reward_sandbox,
        )
        status = api.FinishStatus.cancelled if result.stopped else api.FinishStatus.succeeded
    finally:
        for g in graders:
            g.close()
        if reporter is not None:
            reporter.finish_tracking(status)
        if link is not None:
            link.client.close()
    if link is None or reporter is None:
        return None
    return RankResult(
        steps_done=result.steps_done,
        total_steps=result.total_steps,
        stopped=result.stopped,
        stop_reason=link.stop_reason,
        trained_tokens=reporter.tokens,
    )


class FailureExchange:
    """Ranks' failures shared through torchrun's c10d store (at MASTER_ADDR:MASTER_PORT, hosted by node 0's
    torchrun): a rank on another node writes its own failure there before it exits, and a rank whose collective
    failed because of it (PeerLost) reads it back into its node's failure files, so the worker of node 0, the one
    that reports the job's outcome, names the real cause (an out-of-memory on node 1, say) instead of a lost rank."""

    KEY = "rft/failure/{rank}"

    def __init__(self, store: Any) -> None:
        self.store = store

    @classmethod
    def connect(cls, world: World) -> FailureExchange | None:
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not world.distributed or not addr or not port:
            return None
        from datetime import timedelta

        from torch.distributed import TCPStore

        try:
            return cls(TCPStore(addr, int(port), is_master=False, timeout=timedelta(seconds=5)))
        except (RuntimeError, ValueError):  # node 0's torchrun is gone: nothing to share with
            return None

    def publish(self, record: RankFailure) -> None:
        with contextlib.suppress(RuntimeError):
            self.store.set(self.KEY.format(rank=record.rank), record.model_dump_json())

    def collect(self, world: World, wait: float) -> list[RankFailure]:
        """The other ranks' own failures (not lost peers), waiting up to ``wait`` s for the first to appear."""
        keys = [self.KEY.format(rank=r) for r in range(world.size) if r != world.rank]
        deadline = time.monotonic() + wait
        found: list[RankFailure] = []
        while True:
            with contextlib.suppress(RuntimeError):
                for key in keys:
                    if self.store.check([key]):
                        other = RankFailure.model_validate_json(self.store.get(key))
                        if other.failure.code != PEER_LOST:
                            found.append(other)
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.5)


def _exit_with_torchrun(torchrun_pid: int) -> None:
    """End this rank when torchrun is gone (its worker was killed): a rank runs in a session of its own, so no
    signal of torchrun's group reaches it, and it must not train on headless."""
    while os.getppid() == torchrun_pid:
        time.sleep(2)
    log.error("rank %s: torchrun is gone; exiting", os.environ.get("RANK"))
    os._exit(1)


def record_failure(exc: BaseException, spec: RankSpec, world: World, settings: WorkerSettings) -> None:
    """Leave this rank's failure for its node's launcher (``failures/rank-N.json``) and, through the c10d store,
    for the other nodes; a lost peer also brings back the other ranks' own failures (``FailureExchange``)."""
    if isinstance(exc, StaleLease):
        failure = Failure(code=api.Refusal.stale_lease, message=str(exc))
    else:
        failure = classify(exc, spec.claim.job_id, settings.job_time_limit_seconds)
    record = RankFailure(rank=world.rank, at=time.time(), failure=failure)
    exchange = FailureExchange.connect(world)
    if exchange is not None:
        exchange.publish(record)
        if failure.code == PEER_LOST:  # the cause is another rank's: bring its own failure, if it had one
            for other in exchange.collect(world, wait=5.0):
                _write_atomic(spec.failures / f"rank-{other.rank}.json", other.model_dump_json())
    _write_atomic(spec.failures / f"rank-{world.rank}.json", record.model_dump_json())


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file of this process, then rename it over ``path``: several ranks may write
    the same failure file, and torchrun may kill one mid-write once the first rank has exited, so a reader sees a
    whole file or none."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank {os.environ.get('RANK', '?')} %(message)s")
    spec = RankSpec.model_validate_json(Path(argv[0]).read_text())
    world = World.from_env()
    if world.is_main:  # its tracker is the one that needs the job's secrets (read, and the file deleted)
        spec = spec.with_secrets()
    settings = get_settings()
    (spec.pids / f"rank-{world.rank}").write_text(str(os.getpid()))
    threading.Thread(target=_exit_with_torchrun, args=(os.getppid(),), daemon=True).start()
    try:
        result = run_rank(spec, world, settings)
    except BaseException as exc:  # every way out of a rank leaves its cause for the launcher
        record_failure(exc, spec, world, settings)
        log.exception("job %s: rank %s failed", spec.claim.job_id, world.rank)
        return 1
    if result is not None:
        tmp = spec.result_file.with_suffix(".tmp")
        tmp.write_text(result.model_dump_json())
        tmp.replace(spec.result_file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
