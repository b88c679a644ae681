"""One node's share of a multi-process job: ``torchrun`` started, watched, stopped, and its outcome read back.

The worker that claimed the job (node 0) and every worker that joined it (nodes 1 … M−1) each start
``python -m torch.distributed.run`` (torchrun) with ``resources.devices`` processes running ``worker.rank``.
torchrun's *static* rendezvous is used, on the c10d TCP store that node 0's torchrun hosts at the published
endpoint: node ranks come from the API (the claim is node 0, joins are 1 … M−1), so global rank 0, the rank that
reports, is always on the node that holds the job's lease. (torchrun's dynamic c10d backend orders nodes by
hostname and pid, which would put rank 0 on any node.)

The files in the attempt's folder are the whole interface with the ranks:
- ``spec.json`` (``RankSpec``): the claim, the job as this node validated it (worker.job.Job) and where this
  node's inputs are; every rank reads it. Never the job's secrets: they go in ``secrets.json`` (mode 0600), which
  rank 0, whose tracker needs them, reads and deletes.
- ``stop``: written by the launching worker when the job must stop at the next step boundary (a cancel or pause
  seen by its heartbeat, or its own shutdown); rank 0 reads it before every step and tells the other ranks.
- ``result.json`` (``RankResult``): rank 0's account of a run that ended without an error.
- ``failures/rank-N.json`` (``RankFailure``): a rank's own error, mapped by worker.failures.classify.
- ``pids/rank-N``: each rank's pid (the leader of its process group), so a stop by force also reaches what a rank
  started (a vLLM engine). torchrun dies with the worker process (PR_SET_PDEATHSIG), and a rank whose torchrun
  is gone exits (worker.rank), so nothing of a job trains on without its worker.

torchrun runs with ``--max-restarts 0``: when one rank dies torchrun stops the others and exits non-zero. The
outcome is then the earliest rank failure that is not a lost peer, or, when every recorded failure is a lost
peer (a rank was killed, a node vanished), ``RanksLost``: an infrastructure failure the API retries from the
last checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, SecretStr

from runtime import internal as api
from worker.client import StaleLease
from worker.failures import PEER_LOST, Failure, RankFailed, RanksLost
from worker.job import Inputs, Job

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now, for torchrun's store (the store binds it a moment later)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, resolved in the worker (the parent): loading a library between fork and exec can deadlock on
    a lock another thread (the heartbeat) held at the fork."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return fn


_PRCTL = _prctl()


def _die_with_parent() -> None:
    """In torchrun's process, before it starts: end it (SIGTERM: it stops its ranks) when the worker process that
    started it dies, however it dies (a cold shutdown, the OOM killer), so no job trains on headless."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _read_failures(folder: Path) -> list[RankFailure]:
    """The ranks' failure records; one that cannot be parsed (a rank killed while writing, before writes became
    atomic) is skipped rather than hiding the others' causes behind a parse error."""
    out = []
    for f in sorted(folder.glob("rank-*.json")):
        try:
            out.append(RankFailure.model_validate_json(f.read_text()))
        except (OSError, ValueError):
            log.warning("unreadable failure record %s: skipped", f)
    return out


class RankSpec(BaseModel):
    """What every rank of one node reads (``spec.json``)."""

    claim: api.ClaimResponse
    job: Job  # validated once on this node (worker.job.read_job): every rank trains it as it is
    node_rank: int
    inputs: Inputs
    folder: Path  # the attempt's folder on this node: checkpoints/, stop, result.json, failures/, pids/

    @property
    def checkpoints(self) -> Path:
        return self.folder / "checkpoints"

    @property
    def stop_file(self) -> Path:
        return self.folder / "stop"

    @property
    def result_file(self) -> Path:
        return self.folder / "result.json"

    @property
    def failures(self) -> Path:
        return self.folder / "failures"

    @property
    def pids(self) -> Path:
        return self.folder / "pids"

    @property
    def secrets_file(self) -> Path:
        return self.folder / "secrets.json"

    def write(self) -> None:
        """``spec.json`` for every rank, and the job's secrets apart in ``secrets.json`` for rank 0 only: created
        exclusively, readable by this user alone. Neither is where user code runs: the bwrap sandbox binds nothing
        of the attempt's folder, and the weak tier runs as another uid."""
        (self.folder / "spec.json").write_text(self.model_dump_json(exclude={"claim": {"secrets"}}))
        self.secrets_file.unlink(missing_ok=True)
        if self.claim.secrets:
            values = {name: value.get_secret_value() for name, value in self.claim.secrets.items()}
            fd = os.open(self.secrets_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(values, fh)

    def with_secrets(self) -> RankSpec:
        """Rank 0's spec: the job's secrets read back from ``secrets.json``, which is deleted at once, so no later
        process of the job finds it."""
        try:
            values = json.loads(self.secrets_file.read_text())
        except FileNotFoundError:
            return self
        self.secrets_file.unlink(missing_ok=True)
        claim = self.claim.model_copy(update={"secrets": {k: SecretStr(v) for k, v in values.items()}})
        return self.model_copy(update={"claim": claim})


class RankResult(BaseModel):
    """Rank 0's account of a run that ended without an error."""

    steps_done: int
    total_steps: int
    stopped: bool
    stop_reason: str | None = None  # cancel/pause answered to rank 0's own posts, or the stop file's reason
    trained_tokens: int = 0


class RankFailure(BaseModel):
    rank: int
    at: float  # time.time() when the rank failed: the earliest own failure is the cause
    failure: Failure


class Torchrun:
    """This node's torchrun for one attempt of one job."""

    def __init__(self, spec: RankSpec, master: tuple[str, int], rendezvous_timeout: int) -> None:
        self.spec = spec
        self.master = master
        self.rendezvous_timeout = rendezvous_timeout
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        res = self.spec.claim.resources
        addr, port = self.master
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nnodes={res.nodes}",
            f"--node-rank={self.spec.node_rank}",
            f"--nproc-per-node={res.ranks_per_node}",
            f"--master-addr={addr}",
            f"--master-port={port}",
            "--max-restarts=0",
            "--monitor-interval=0.5",
            f"--rdzv-conf=timeout={self.rendezvous_timeout}",
            f"--rdzv-id={self.spec.claim.job_id}-e{self.spec.claim.epoch}",
            "-m",
            "worker.rank",
            str(self.spec.folder / "spec.json"),
        ]

    def start(self) -> None:
        """Write the spec and start torchrun in its own session (so a stop by force reaches all of it)."""
        for d in (self.spec.folder, self.spec.failures, self.spec.pids, self.spec.checkpoints):
            d.mkdir(parents=True, exist_ok=True)
        self.spec.write()
        from grpo_core.hardware.device import (
            usable_cpus,  # torch: imported where a job runs, not where the worker starts
        )

        threads = max(1, usable_cpus() // self.spec.claim.resources.devices)
        # TORCH_NCCL_BLOCKING_WAIT: a collective on NCCL waits in the calling thread and raises there when a peer
        # is gone or it times out (grpo_core.hardware.distributed turns that into PeerLost); without it the error
        # surfaces later, outside the collective, or NCCL's watchdog aborts the process with no failure of its own
        # recorded. The ranks' collectives are a few per step, so waiting in the thread costs nothing measurable.
        env = os.environ | {"OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1", "TORCH_NCCL_BLOCKING_WAIT": "1"}
        log.info("job %s: starting %s", self.spec.claim.job_id, " ".join(self.command()))
        self.proc = subprocess.Popen(self.command(), env=env, start_new_session=True, preexec_fn=_die_with_parent)

    def request_stop(self, reason: str) -> None:
        """Ask the ranks to stop at the next step boundary (rank 0 reads the file before every step)."""
        tmp = self.spec.stop_file.with_suffix(".tmp")
        tmp.write_text(reason)
        tmp.replace(self.spec.stop_file)

    def wait(self, tick: Callable[[], object], interval: float = 0.5) -> int:
        """Block until torchrun exits, calling ``tick`` every ``interval`` s (the caller's stop checks)."""
        assert self.proc is not None
        while self.proc.poll() is None:
            tick()
            time.sleep(interval)
        return self.proc.returncode

    def kill(self, grace: float = 10.0) -> None:
        """End torchrun and every rank when torchrun still runs: SIGTERM (torchrun then stops its ranks), SIGKILL
        after ``grace`` s, then each rank's process group (ranks lead sessions of their own, torchrun's choice; a
        vLLM engine a rank started is in it). A torchrun that exited on its own already ended its ranks. The
        secrets file goes too, in case rank 0 never got to read it."""
        self.spec.secrets_file.unlink(missing_ok=True)
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for pid_file in self.spec.pids.glob("rank-*"):
            with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)

    def outcome(self) -> RankResult | None:
        """Rank 0's result (None on a node without rank 0) after a clean exit; else raise the cause:
        ``RankFailed`` for a rank's own error, ``StaleLease`` when rank 0 lost the lease, ``RanksLost`` otherwise."""
        assert self.proc is not None
        code = self.proc.returncode
        if code == 0:
            if self.spec.result_file.is_file():
                return RankResult.model_validate_json(self.spec.result_file.read_text())
            return None
        failures = _read_failures(self.spec.failures)
        own = sorted((f for f in failures if f.failure.code != PEER_LOST), key=lambda f: f.at)
        if own:
            first = own[0]
            if first.failure.code == api.Refusal.stale_lease:
                raise StaleLease(first.failure.message)
            raise RankFailed(first.failure, first.rank)
        if not any(self.spec.pids.iterdir()):  # no rank started: the rendezvous never completed
            res = self.spec.claim.resources
            if res.nodes > 1:
                addr, port = self.master
                raise RanksLost(
                    f"the job's other {res.nodes - 1} node(s) did not join its rendezvous at {addr}:{port} within "
                    f"{self.rendezvous_timeout} s (RENDEZVOUS_TIMEOUT_SECONDS): no free worker took the join, or "
                    "it could not reach that address (ADVERTISE_ADDR)"
                )
            raise RanksLost(f"torchrun exited with status {code} before starting the ranks (see the worker's log)")
        raise RanksLost(
            f"a training process of this job died without an error of its own (torchrun exited with status {code}: "
            "a rank was killed or its node was lost); the attempt ends here and the job resumes from its last "
            "checkpoint"
        )
