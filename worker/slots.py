"""How many tenants (jobs, training-API sessions) one worker process holds, how often it asks for more, and whether
their work is computed together: read by the pool of jobs (worker.pool) and the pool of sessions
(worker.training_api.pool) alike."""

from __future__ import annotations

from worker.settings import WorkerSettings

FILL_EVERY = 2.0  # seconds between asks for more tenants while the pool has room and the queue had none


def pool_slots(settings: WorkerSettings) -> int:
    """Sessions per worker process: POOL_TENANTS, else 4 on a GPU (each more costs its runs' adapters and optimizer
    states; requests take turns) and 1 on a CPU (no idle device to share). A pool of jobs sizes itself
    (``job_slots``)."""
    if settings.pool_tenants is not None:
        return settings.pool_tenants
    import torch

    return 4 if torch.cuda.is_available() else 1


def job_slots(settings: WorkerSettings) -> tuple[int, bool]:
    """A pool of jobs' tenants, and whether its memory plan sizes it: POOL_TENANTS when set; unset on a GPU, at most
    grpo_core.hardware.memory.POOL_CAP, sized once the first job's step has run (grpo_core.pool.TurnPool
    .planned_room: its measured peak, each more job's adapter state, each session's run's adapter state and
    sampler copy); 1 (no pool) on a CPU."""
    if settings.pool_tenants is not None:
        return settings.pool_tenants, False
    import torch

    from grpo_core.hardware.memory import POOL_CAP

    return (POOL_CAP, True) if torch.cuda.is_available() else (1, False)


def works_together(settings: WorkerSettings) -> bool:
    """Whether pooled training-API sessions' forward_backward calls pending at once share passes
    (grpo_core.training_api.together): POOL_SAMPLE_TOGETHER, else on a GPU (grpo_core.pool.sample_together's
    reason: a small pass is launch-bound there, compute-bound on a CPU)."""
    if settings.pool_sample_together is not None:
        return settings.pool_sample_together
    import torch

    return torch.cuda.is_available()
