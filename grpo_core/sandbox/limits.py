"""The sandbox's limits and errors, kept free of any process code so settings and tests can import them cheaply."""

from __future__ import annotations

from dataclasses import asdict, dataclass


class GraderError(RuntimeError):
    """The grader as a whole failed (kept for the worker, which maps it to a job's ``grader_error``)."""


class SandboxUnavailable(RuntimeError):
    """No usable sandbox tier under the configured policy. Raised instead of ever running user code unsandboxed."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandboxed grader process may use.

    Memory, open files, file size and processes are rlimits set (soft = hard) inside the sandbox before the user
    code is imported. ``cpu_seconds`` is RLIMIT_CPU over the life of one sandbox process, a backstop only: the
    runner recycles the process once it has used half of it, and the real per-batch bound is the wall clock,
    ``batch_timeout_seconds + per_item_timeout_seconds * len(batch)``, after which the whole sandbox is killed.
    ``processes`` is RLIMIT_NPROC, which counts threads; new processes are refused by seccomp anyway.
    """

    memory_mb: int = 2048
    cpu_seconds: int = 600
    open_files: int = 64
    file_size_mb: int = 16
    processes: int = 64
    tmp_size_mb: int = 64  # size of the private tmpfs /tmp (bwrap tier)
    batch_timeout_seconds: float = 10.0
    per_item_timeout_seconds: float = 0.05
    load_timeout_seconds: float = 30.0  # start-up plus the import of the user's module (sympy takes ~1 s)
    recycle_after_batches: int = 500

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value < 0 or (value == 0 and name != "per_item_timeout_seconds"):
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value!r}")

    def timeout_for(self, n_items: int) -> float:
        """Wall-clock seconds allowed for one batch of ``n_items``."""
        return self.batch_timeout_seconds + self.per_item_timeout_seconds * n_items

    def rlimits(self) -> dict[str, int]:
        """The values the worker inside the sandbox applies to itself (config.json)."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "open_files": self.open_files,
            "file_size_mb": self.file_size_mb,
            "processes": self.processes,
        }
