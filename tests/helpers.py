"""Shared test helpers: schema by Alembic, JSONL bytes, job bodies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def migrate(url: str) -> None:
    """Build the schema exactly as production does: ``alembic upgrade head``."""
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    command.upgrade(cfg, "head")


def jsonl(rows: list[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


ARITH_ROWS = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(4) for b in range(4)]

PY_GRADER = {
    "type": "python",
    "name": "has_digit",
    "source": (
        "def grade(sample, item):\n"
        "    t = sample['output_text']\n"
        "    return sum(c.isdigit() for c in t) / max(len(t), 1)\n"
    ),
}


# The same reward as a built-in grader (no sandbox): for machines without the python-grader sandbox (a bare GPU box).
DIGIT_GRADER = {"type": "regex", "name": "has_digit", "pattern": "[0-9]"}


def job_body(model: str, file_id: str, *, grader: dict[str, Any] | None = None, **hp: Any) -> dict[str, Any]:
    hyper = {
        "group_size": 4,
        "batch_size": 2,
        "max_steps": 3,
        "max_completion_tokens": 6,
        "learning_rate": 1e-3,
        "checkpoint_interval": 2,
    } | hp
    return {
        "model": model,
        "training_file": file_id,
        "seed": 7,
        "method": {
            "type": "reinforcement",
            "reinforcement": {"grader": dict(grader or PY_GRADER), "hyperparameters": hyper},
        },
    }


def alembic_check(url: str) -> None:
    """Fail when the models and the migrations disagree (``alembic check``)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    command.check(cfg)


def step_metrics(step: int, total: int = 3, *, reward: float | None = 0.5, **fields: Any) -> dict[str, Any]:
    """A valid metrics event's ``data`` (grpo_core.schemas.metrics.StepMetrics as JSON) for tests that play the
    worker; ``fields`` replace top-level fields (``scores=…``, ``samples=…``)."""
    from grpo_core.schemas.metrics import StepMetrics

    data: dict[str, Any] = {
        "step": step,
        "total_steps": total,
        "scores": {"train_reward_mean": reward, "graders": [{"name": "g", "train_reward_mean": reward}]},
        "timing": {"step": {"sampling": 0.5, "scoring": 0.1, "training": 0.4, "full_iteration": 1.0}},
        "train_reward_std": 0.1,
        "frac_reward_zero_std": 0.0,
        "loss": 0.0,
        "kl": None,
        "clip_ratio": 0.0,
        "clip_ratio_low": 0.0,
        "clip_ratio_high": 0.0,
        "entropy": 1.0,
        "tokens_per_second": 10.0,
        "grad_norm": 0.5,
        "learning_rate": 1e-5,
        "completion_length_mean": 10.0,
        "completion_length_min": 5,
        "completion_length_max": 15,
        "truncated_ratio": 0.0,
        "overlong_penalty_mean": 0.0,
        "advantage_mean": 0.0,
        "advantage_std": 1.0,
        "tokens": 80,
        "sampling": {"sampling_rounds": 1, "groups_sampled": 2, "groups_dropped": 0, "groups_trained": 2},
    } | fields
    return StepMetrics.model_validate(data).model_dump(mode="json")


def metrics_event(step: int, total: int = 3, **fields: Any) -> dict[str, Any]:
    """A worker's metrics event for ``step`` (the internal API's MetricsEvent as JSON)."""
    return {
        "type": "metrics",
        "step": step,
        "message": f"Step {step}/{total}",
        "data": step_metrics(step, total, **fields),
    }


def claim(**fields: Any) -> Any:
    """A worker's claim (runtime.internal.ClaimResponse) of job ``ftjob-x`` for tests that play the API;
    ``fields`` replace its values (``resources=…``, ``epoch=…``)."""
    from runtime import internal as api

    base: dict[str, Any] = {
        "job_id": "ftjob-x",
        "epoch": 1,
        "lease_expires_at": 0,
        "lease_seconds": 600,
        "model": "m",
        "seed": 0,
        "hyperparameters": {},
        "grader": {},
        "training_file_key": "k",
        "validation_file_key": None,
        "total_steps": 1,
        "object_prefix": "projects/p/jobs/ftjob-x/",
    }
    return api.ClaimResponse.model_validate(base | fields)


def rank_spec(claim: Any, folder: Path, node_rank: int = 0) -> Any:
    """The ``spec.json`` every rank of a node reads (worker.launch.RankSpec) for ``claim``, with a job as the node
    validated it (worker.job.Job: the default config, the digit grader) and ``folder/t.jsonl`` as its data."""
    from grpo_core.schemas.config import GRPOConfig
    from worker.job import Inputs, Job
    from worker.launch import RankSpec

    job = Job(cfg=GRPOConfig(), grader=DIGIT_GRADER, model_dir=folder / "model")
    return RankSpec(claim=claim, job=job, node_rank=node_rank, inputs=Inputs(train=folder / "t.jsonl"), folder=folder)
