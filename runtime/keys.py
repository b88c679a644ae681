"""Object keys: where a project's files and a job's checkpoints live in the store, built and parsed here only.

    projects/<project>/files/<file>.jsonl                          an uploaded dataset
    projects/<project>/jobs/<job>/checkpoints/step-<NNNNNN>-e<E>.tar       the adapter users download
    projects/<project>/jobs/<job>/checkpoints/step-<NNNNNN>-e<E>.ckpt.tar  the full state an exact resume needs

One project's objects share one prefix (listed, exported or deleted together, or fenced by a bucket policy).
A checkpoint's key names the lease epoch that wrote it, so the API can tell an upload from a dead attempt that
was never registered (garbage) from the live attempt's (api.jobs.claims.orphaned_checkpoint_keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

CheckpointPart = Literal["adapter", "state"]
_SUFFIX: dict[CheckpointPart, str] = {"adapter": ".tar", "state": ".ckpt.tar"}
_CHECKPOINT = re.compile(r"/checkpoints/step-(?P<step>\d{6,})-e(?P<epoch>\d+)(?P<suffix>\.ckpt\.tar|\.tar)$")


def file_key(project_id: str, file_id: str) -> str:
    return f"projects/{project_id}/files/{file_id}.jsonl"


def job_prefix(project_id: str, job_id: str) -> str:
    """Every object of one job starts with this (it ends with a slash)."""
    return f"projects/{project_id}/jobs/{job_id}/"


def checkpoints_prefix(prefix: str) -> str:
    """Where the checkpoints of the job whose objects start with ``prefix`` are."""
    return f"{prefix}checkpoints/"


@dataclass(frozen=True)
class CheckpointKey:
    """One checkpoint object: which step, written under which lease epoch, adapter or full state."""

    prefix: str  # the job's (job_prefix)
    step: int
    epoch: int
    part: CheckpointPart

    def __str__(self) -> str:
        return f"{checkpoints_prefix(self.prefix)}step-{self.step:06d}-e{self.epoch}{_SUFFIX[self.part]}"

    @classmethod
    def parse(cls, key: str) -> CheckpointKey | None:
        """The parts of a checkpoint key, or None for any other object."""
        m = _CHECKPOINT.search(key)
        if m is None:
            return None
        part: CheckpointPart = "state" if m["suffix"] == _SUFFIX["state"] else "adapter"
        return cls(key[: m.start() + 1], int(m["step"]), int(m["epoch"]), part)


def checkpoint_keys(prefix: str, step: int, epoch: int) -> tuple[str, str]:
    """(adapter key, state key) of the checkpoint ``epoch`` writes at ``step`` for the job under ``prefix``."""
    return str(CheckpointKey(prefix, step, epoch, "adapter")), str(CheckpointKey(prefix, step, epoch, "state"))
