"""What a failed run tells the user: one mapping from an exception to a job failure (code, message, retry?).

Used by the process that trains in-process (worker.runner) and by every rank of a multi-process job
(worker.rank), whose failures cross the process boundary as JSON (``Failure``) and are read back by the launching
worker (worker.launch): the same exception gives the same code wherever it was raised.
"""

from __future__ import annotations

import logging

from celery.exceptions import SoftTimeLimitExceeded
from pydantic import BaseModel

from grpo_core.errors import DeviceOutOfMemory, GraderFailed, PeerLost, UserError, is_out_of_memory
from grpo_core.rewards.python_runner import GraderError
from runtime.errors import InfrastructureError

log = logging.getLogger(__name__)

PEER_LOST = "peer_lost"  # a rank's collective failed because another rank is gone: never the cause


class Failure(BaseModel):
    """How a run failed, in the words the job shows; ``retryable``: an infrastructure failure."""

    code: str
    message: str
    retryable: bool = False


class RankFailed(Exception):
    """A rank of a multi-process job failed with its own error (read from its failure file)."""

    def __init__(self, failure: Failure, rank: int) -> None:
        super().__init__(f"rank {rank}: {failure.message}")
        self.failure, self.rank = failure, rank


class RanksLost(InfrastructureError):
    """A rank of a multi-process job died without a failure of its own (killed, its node lost, a crash of the
    interpreter): an infrastructure failure; the next attempt resumes from the last checkpoint."""


def is_infrastructure(exc: BaseException) -> bool:
    """Failures of what the job runs on (object store, network, disk, the API), which another attempt may not
    meet; the job's own mistakes (UserError, grader errors) and bugs are not retried."""
    if isinstance(exc, InfrastructureError):
        return True
    return isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError | PermissionError)


def classify(exc: BaseException, job_id: str, time_limit_seconds: int | None) -> Failure:
    """The failure for ``exc``: the job's own mistakes, the operator's limits, infrastructure (retried while
    attempts remain), memory, a lost peer, and bugs each get their code."""
    if isinstance(exc, RankFailed):
        return exc.failure
    if isinstance(exc, GraderFailed | GraderError):
        return Failure(code="grader_error", message=str(exc))
    if isinstance(exc, DeviceOutOfMemory):  # never retried: the same settings run out the same way
        return Failure(code="out_of_memory", message=str(exc))  # the trainer's words: step, peak and remedy
    if is_out_of_memory(exc):
        msg = "out of memory: lower group_size, batch_size, micro_batch_size or max_completion_tokens"
        return Failure(code="out_of_memory", message=msg)
    if isinstance(exc, UserError):
        return Failure(code="invalid_job", message=str(exc))
    if isinstance(exc, SoftTimeLimitExceeded):  # the operator's per-attempt budget (JOB_TIME_LIMIT_SECONDS)
        return Failure(
            code="time_limit", message=f"the attempt exceeded this service's {time_limit_seconds} s time limit"
        )
    if isinstance(exc, PeerLost):
        return Failure(code=PEER_LOST, message=str(exc), retryable=True)
    if is_infrastructure(exc):  # not the job's fault: the API re-queues it while attempts remain
        log.error("job %s: infrastructure error", job_id, exc_info=exc)
        return Failure(code="infrastructure_error", message=f"{type(exc).__name__}: {exc}", retryable=True)
    log.error("job %s crashed", job_id, exc_info=exc)
    return Failure(code="internal_error", message=f"{type(exc).__name__}: {exc}")
