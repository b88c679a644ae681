"""How many tenants (jobs, training-API sessions) one worker process holds, how often it asks for more, and whether
their work is computed together: read by the pool of jobs (worker.pool) and the pool of sessions
(worker.training_api.pool) alike."""

from __future__ import annotations

from worker.settings import WorkerSettings

FILL_EVERY = 2.0  # seconds between asks for more tenants while the pool has room and the queue had none


def pool_slots(settings: WorkerSettings) -> int:
    """Tenants per worker process: POOL_TENANTS, else 4 on a GPU (tenants in turn hold one step's activations at a
    time; each more costs its adapter and optimizer state) and 1 on a CPU (no idle device to share)."""
    if settings.pool_tenants is not None:
        return settings.pool_tenants
    import torch

    return 4 if torch.cuda.is_available() else 1


def works_together(settings: WorkerSettings) -> bool:
    """Whether pooled training-API sessions' forward_backward calls pending at once share passes
    (grpo_core.training_api.together): POOL_SAMPLE_TOGETHER, else on a GPU (grpo_core.pool.sample_together's
    reason: a small pass is launch-bound there, compute-bound on a CPU)."""
    if settings.pool_sample_together is not None:
        return settings.pool_sample_together
    import torch

    return torch.cuda.is_available()
