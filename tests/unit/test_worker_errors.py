"""How the worker classifies a failed run: the job's own mistakes fail it, infrastructure failures retry."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from api.settings import Settings
from grpo_core.errors import GraderFailed, UserError
from worker.runner import JobRun


def _botocore_error() -> Exception:
    from botocore.exceptions import EndpointConnectionError

    return EndpointConnectionError(endpoint_url="http://s3.invalid")


@pytest.mark.parametrize(
    ("exc", "code", "retryable"),
    [
        (UserError("row 3: bad"), "invalid_job", False),
        (GraderFailed("grader 'g' failed on 90%"), "grader_error", False),
        (SoftTimeLimitExceeded(), "time_limit", False),
        (MemoryError(), "out_of_memory", False),
        (ValueError("a bug"), "internal_error", False),
        (_botocore_error(), "infrastructure_error", True),
        (ConnectionResetError("peer"), "infrastructure_error", True),
    ],
)
def test_failures_map_to_codes_and_only_infrastructure_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: Exception, code: str, retryable: bool
) -> None:
    run = JobRun("ftjob-x", Settings(state_dir=tmp_path, worker_token="t", job_time_limit_seconds=3600))

    def boom(*_: object) -> None:
        raise exc

    monkeypatch.setattr(run, "_run_training", boom)
    status, extra = run._train({}, tmp_path)
    assert status == "failed" and extra["error_code"] == code
    assert extra.get("retryable", False) is retryable
    if code == "time_limit":
        assert "3600 s time limit" in extra["error_message"]
