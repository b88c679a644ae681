"""A worker that joins a multi-node job as one of its other nodes (``join_job``: nodes 1 … M−1).

The API rings ``join_job(job_id, epoch)`` once the claiming worker published its rendezvous endpoint. This worker
asks to join (the API hands out node ranks and refuses a place past the job's node count, for an older attempt,
or once the attempt is over), fetches its own copy of the inputs and runs its torchrun (worker.launch) against
the endpoint. It holds no lease and reports nothing on the job's behalf: rank 0, on node 0, does. When one of its
ranks fails with an error of its own, it posts that as an event (fenced by the epoch), so the user sees the cause
beside node 0's "a training process died".
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path

from runtime import internal as api
from runtime.storage import make_store
from worker.client import InternalClient, StaleLease, worker_id
from worker.failures import RankFailed, RanksLost
from worker.job import check_sandbox, fetch_inputs, model_cache, read_job
from worker.launch import RankSpec, Torchrun
from worker.preflight import drop_rows
from worker.settings import WorkerSettings

log = logging.getLogger(__name__)


class JoinRun:
    def __init__(self, job_id: str, epoch: int, settings: WorkerSettings) -> None:
        self.job_id, self.epoch, self.settings = job_id, epoch, settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.worker_id = worker_id()

    def run(self) -> None:
        try:
            joined = self.client.join(self.job_id, self.epoch, self.worker_id)
        except StaleLease as exc:  # no place: the job has its nodes, the attempt is over, or a newer one runs
            log.info("job %s: not joined: %s", self.job_id, exc)
            self.client.close()
            return
        folder = self.settings.scratch_dir / self.job_id / f"e{self.epoch}-node{joined.node_rank}"
        try:
            self._run(joined, folder)
        except StaleLease as exc:
            log.info("job %s: the attempt ended: %s", self.job_id, exc)
        finally:
            self.client.close()
            shutil.rmtree(folder, ignore_errors=True)
            model_cache(self.settings).release_all()

    def _run(self, joined: api.JoinResponse, folder: Path) -> None:
        claim = joined.job
        host, port = joined.endpoint.rsplit(":", 1)
        try:
            store = make_store(self.settings)
            job = read_job(claim, self.settings, store, self._say)
            check_sandbox(job, self.settings, lambda _: None)
            inputs = fetch_inputs(store, claim, folder / "inputs")
            job = drop_rows(job, claim.total_steps, inputs, claim.readiness_dropped_rows or [])  # as node 0's probe
        except Exception as exc:  # node 0 waits for this node until its rendezvous times out: say why
            self._say(f"Node {joined.node_rank} could not start: {type(exc).__name__}: {exc}")
            raise
        spec = RankSpec(claim=claim, job=job, node_rank=joined.node_rank, inputs=inputs, folder=folder / "ranks")
        ranks = Torchrun(spec, (host, int(port)), self.settings.rendezvous_timeout_seconds)
        try:
            ranks.start()
            ranks.wait(tick=lambda: None)
            ranks.outcome()
        except RankFailed as exc:
            self._say(f"Node {joined.node_rank}: {exc}")
        except RanksLost as exc:
            log.warning("job %s node %s: %s", self.job_id, joined.node_rank, exc)
        finally:
            ranks.kill()

    def _say(self, message: str) -> None:
        with contextlib.suppress(StaleLease):
            self.client.events(self.job_id, self.epoch, [api.MessageEvent(message=message, level="error")])
