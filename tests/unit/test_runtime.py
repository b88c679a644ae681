"""The runtime package both processes share: object keys built and parsed in one place, store errors typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import InfrastructureError, StoreError
from runtime.keys import CheckpointKey, checkpoint_keys, file_key, job_prefix
from worker.settings import WorkerSettings


def test_checkpoint_keys_round_trip() -> None:
    prefix = job_prefix("proj-a", "ftjob-1")
    adapter, state = checkpoint_keys(prefix, 40, 3)
    assert adapter == "projects/proj-a/jobs/ftjob-1/checkpoints/step-000040-e3.tar"
    assert state == "projects/proj-a/jobs/ftjob-1/checkpoints/step-000040-e3.ckpt.tar"
    assert CheckpointKey.parse(adapter) == CheckpointKey(prefix, 40, 3, "adapter")
    assert CheckpointKey.parse(state) == CheckpointKey(prefix, 40, 3, "state")
    assert CheckpointKey.parse(file_key("proj-a", "file-1")) is None
    assert CheckpointKey.parse(f"{prefix}checkpoints/notes.txt") is None


def test_s3_failures_are_store_errors(tmp_path: Path) -> None:
    """A missing bucket (what a misconfigured or unreachable store looks like to boto3) is a StoreError, so the
    worker retries the job instead of calling it a bug."""
    from moto import mock_aws

    from runtime.storage import make_store

    settings = WorkerSettings(
        state_dir=tmp_path, s3_bucket="no-such-bucket", aws_access_key_id="k", aws_secret_access_key="s"
    )
    with mock_aws():
        store = make_store(settings)
        with pytest.raises(StoreError) as info:
            store.get_file("projects/p/files/f.jsonl", tmp_path / "f.jsonl")
        assert isinstance(info.value, InfrastructureError) and info.value.__cause__ is not None
        with pytest.raises(StoreError):
            store.exists("x")
        (tmp_path / "up.tar").write_bytes(b"x")
        with pytest.raises(StoreError):  # boto3's managed upload fails with an error of its own (S3UploadFailedError)
            store.put_file("projects/p/jobs/j/checkpoints/a.tar", tmp_path / "up.tar")
