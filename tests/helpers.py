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


def job_body(model: str, file_id: str, **hp: Any) -> dict[str, Any]:
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
        "method": {"type": "reinforcement", "reinforcement": {"grader": dict(PY_GRADER), "hyperparameters": hyper}},
    }


def alembic_check(url: str) -> None:
    """Fail when the models and the migrations disagree (``alembic check``)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    command.check(cfg)
