"""How the worker classifies a failed run: the job's own mistakes fail it, infrastructure failures retry."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from celery.exceptions import SoftTimeLimitExceeded

from grpo_core.errors import DeviceOutOfMemory, GraderFailed, PeerLost, UserError
from runtime.errors import StoreError
from tests.helpers import claim
from worker.client import ApiUnreachable
from worker.failures import Failure, RankFailed, RanksLost
from worker.runner import JobRun
from worker.settings import WorkerSettings

CLAIM = claim()


@pytest.mark.parametrize(
    ("exc", "code", "retryable"),
    [
        (UserError("row 3: bad"), "invalid_job", False),
        (GraderFailed("grader 'g' failed on 90%"), "grader_error", False),
        (SoftTimeLimitExceeded(), "time_limit", False),
        (MemoryError(), "out_of_memory", False),
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "out_of_memory", False),
        (DeviceOutOfMemory("out of memory on cuda:0 in the update of step 3: lower …"), "out_of_memory", False),
        (
            RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 GB"),
            "out_of_memory",
            False,
        ),
        (ValueError("a bug"), "internal_error", False),
        (StoreError("object store: download of 'k' failed"), "infrastructure_error", True),
        (ApiUnreachable("/internal/jobs/x/events: ConnectError"), "infrastructure_error", True),
        (ConnectionResetError("peer"), "infrastructure_error", True),
        # a multi-process job: a rank's own failure keeps its code; ranks lost without one are infrastructure
        (RankFailed(Failure(code="grader_error", message="grader 'g' failed"), rank=1), "grader_error", False),
        (RanksLost("a training process of this job died"), "infrastructure_error", True),
        (PeerLost("all_reduce failed: another rank of the job is gone"), "peer_lost", True),
    ],
)
def test_failures_map_to_codes_and_only_infrastructure_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: Exception, code: str, retryable: bool
) -> None:
    run = JobRun("ftjob-x", WorkerSettings(state_dir=tmp_path, worker_token="t", job_time_limit_seconds=3600))

    def boom(*_: object) -> None:
        raise exc

    monkeypatch.setattr(run, "_run_training", boom)
    outcome = run._train(CLAIM, tmp_path)
    assert outcome.status == "failed" and outcome.error_code == code
    assert outcome.retryable is retryable
    if code == "time_limit":
        assert "3600 s time limit" in (outcome.error_message or "")
    if isinstance(exc, DeviceOutOfMemory):  # the trainer's message (step, peak, remedy) reaches the user as is
        assert outcome.error_message == str(exc)
