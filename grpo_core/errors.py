"""Exceptions whose message is meant for the job's owner (bad data, bad grader), as opposed to infrastructure.

The worker reports a ``UserError`` as the job's failure reason verbatim and never retries it.
"""


class UserError(Exception):
    """Something the user must fix in their job: the message says what and where."""


class GraderFailed(UserError):
    """The job's grader failed on too many completions; the message carries its own error excerpt."""


class DeviceOutOfMemory(UserError):
    """The device ran out of memory: the message names the step, the phase, the peak and what to change.

    A ``UserError`` because the remedy is the job's settings; never retried (the same settings would fail the
    same way)."""


class PeerLost(RuntimeError):
    """A collective of a multi-process job failed: another rank is gone (killed, crashed, its node lost), and this
    rank's failure is a consequence, not the cause. The launcher looks for the cause elsewhere (the other ranks'
    own errors, or a rank that died without one: an infrastructure failure, retried from the last checkpoint)."""


def is_out_of_memory(exc: BaseException) -> bool:
    """Memory exhaustion: MemoryError, torch.OutOfMemoryError (GPU), or a RuntimeError from the CPU allocator,
    which has no class of its own (its message is all there is to read). One predicate for the worker's failure
    mapping and grpo_core.hardware.distributed, which must not take this rank's own exhaustion for a lost peer."""
    import torch  # here, not at the top: this module stays importable without torch (the worker's start)

    if isinstance(exc, MemoryError | torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)
