"""Which jobs may share a worker's resident base model (grpo_core.pool), decided once for the API's scheduler and
the worker; no torch here.

A pool runs its tenants in turn on one process's merged engine (or their rollouts in one decode on its resident base,
grpo_core.joint), one rank, one adapter slot. So a job pools when it
trains on one device of one node, samples in turn (``max_staleness`` 0) on the merged engine (``auto`` becomes
merged in a pool), and runs no readiness probe (the probe opens policies of its own around training); and two jobs
share a pool when they have the same base model and the same adapter shape (``pool_key``).
"""

from __future__ import annotations

import json

from grpo_core.schemas.config import GRPOConfig


def pool_problem(cfg: GRPOConfig, devices: int = 1, nodes: int = 1, rollout_devices: int = 0) -> str | None:
    """Why a job with ``cfg`` on these resources takes a worker of its own, or None when it may share one."""
    if devices != 1 or nodes != 1 or rollout_devices:
        return "it trains on several devices"
    if cfg.max_staleness:
        return "max_staleness > 0 samples beside the trainer"
    if cfg.rollout_engine not in ("auto", "merged"):
        return f"rollout_engine {cfg.rollout_engine!r}: a pool samples on the merged engine it shares"
    if cfg.preflight is not None:
        return "the readiness probe opens policies of its own"
    return None


def pool_key(model: str, cfg: GRPOConfig) -> str:
    """Jobs with one key can share a pool: the base model and the adapter's shape."""
    return json.dumps({"model": model, "lora": cfg.lora.model_dump(mode="json")}, sort_keys=True)
