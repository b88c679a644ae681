"""What the training API lists and describes, in the SDK's shapes: server capabilities, a run's info, training runs
and their checkpoints (``RestClient``), and deleting a checkpoint. Every row is the caller's project's; another
project's run or checkpoint is a 404. Times are ISO datetimes (the SDK parses them so)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.checkpoints import service as checkpoints
from api.core.errors import NotFound
from api.db.models import TrainingCheckpoint, TrainingRun
from api.models.service import available
from api.models.service import find as find_model
from api.training_api.paths import KIND_OF_SEGMENT, TinkerPath, segment
from api.training_api.service import find_checkpoint
from grpo_core.models.catalog import base_model_name
from runtime.settings import CommonSettings
from runtime.storage import ObjectStore


def _time(t: int) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat()


def _strings(meta: dict[str, Any] | None) -> dict[str, str] | None:
    """User metadata as the SDK types it (str -> str)."""
    if meta is None:
        return None
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()}


def capabilities(db: Session, settings: CommonSettings) -> list[dict[str, Any]]:
    out = []
    for name, entry in available(db, settings).items():
        length = entry.row.context_length if entry.row is not None else None
        out.append({"model_name": name, "max_context_length": length, "trainable": True, "sampleable": True})
    return out


def tokenizer_id(db: Session, settings: CommonSettings, base_model: str) -> str:
    """What the SDK's ``get_tokenizer`` loads with ``AutoTokenizer.from_pretrained``: the hub id a registered model
    was recorded with, else the model's id here (a user without the hub's copy needs it in the HF cache)."""
    entry = find_model(db, settings, base_model)
    if entry is not None and entry.row is not None and entry.row.hub_id:
        return entry.row.hub_id
    if entry is not None and entry.catalog_dir is not None:
        return base_model_name(entry.catalog_dir)
    return base_model


def info(db: Session, settings: CommonSettings, run: TrainingRun) -> dict[str, Any]:
    return {
        "type": "get_info",
        "model_id": run.id,
        "model_data": {
            "arch": None,
            "model_name": run.base_model,
            "tokenizer_id": tokenizer_id(db, settings, run.base_model),
        },
        "is_lora": True,
        "lora_rank": run.lora.get("rank"),
        "model_name": run.base_model,
        "optimizer_config": {"type": "adamw"},
    }


def checkpoint(row: TrainingCheckpoint) -> dict[str, Any]:
    return {
        "id": row.id,  # this service's checkpoint id (downloads, /v1/chat/completions)
        "checkpoint_id": f"{segment(row.kind)}/{row.name}",
        "checkpoint_type": row.kind,
        "time": _time(row.created_at),
        "tinker_path": row.tinker_path,
        "size_bytes": row.size_bytes,
        "public": False,
    }


def _last(db: Session, run_id: str, kind: str) -> dict[str, Any] | None:
    row = checkpoints.last_of_run(db, run_id, kind)
    return checkpoint(row) if row is not None else None


def run(db: Session, row: TrainingRun) -> dict[str, Any]:
    return {
        "training_run_id": row.id,
        "base_model": row.base_model,
        "model_owner": row.project_id,
        "is_lora": True,
        "corrupted": False,
        "lora_rank": row.lora.get("rank"),
        "last_request_time": _time(row.last_request_at),
        "last_checkpoint": _last(db, row.id, "training"),
        "last_sampler_checkpoint": _last(db, row.id, "sampler"),
        "user_metadata": _strings(row.user_metadata),
    }


def runs(db: Session, project_id: str, limit: int, offset: int) -> dict[str, Any]:
    limit = max(1, min(limit, 100))
    where = TrainingRun.project_id == project_id
    total = db.scalar(select(func.count()).select_from(TrainingRun).where(where)) or 0
    rows = db.scalars(
        select(TrainingRun)
        .where(where)
        .order_by(TrainingRun.created_at.desc(), TrainingRun.id)
        .offset(offset)
        .limit(limit)
    ).all()
    return {
        "training_runs": [run(db, r) for r in rows],
        "cursor": {"offset": offset, "limit": limit, "total_count": total},
    }


def checkpoints_page(db: Session, project_id: str, run_id: str | None, limit: int, offset: int) -> dict[str, Any]:
    rows, total = checkpoints.project_run_checkpoints(db, project_id, run_id, limit, offset)
    return {
        "checkpoints": [checkpoint(r) for r in rows],
        "cursor": {"offset": offset, "limit": limit, "total_count": total},
    }


def delete(db: Session, store: ObjectStore, project_id: str, run_id: str, checkpoint_id: str) -> None:
    part, _, name = checkpoint_id.partition("/")
    kind = KIND_OF_SEGMENT.get(part)
    if kind is None:
        raise NotFound(f"no checkpoint {checkpoint_id!r}", param="checkpoint_id")
    row = find_checkpoint(db, project_id, str(TinkerPath(run_id, kind, name)), param="checkpoint_id")
    checkpoints.delete_run_checkpoint(db, store, row)


def weights_info(db: Session, project_id: str, tinker_path: str) -> dict[str, Any]:
    row = find_checkpoint(db, project_id, tinker_path, param="tinker_path")
    run_row = db.get(TrainingRun, row.run_id)
    assert run_row is not None
    lora = run_row.lora
    return {
        "base_model": run_row.base_model,
        "is_lora": True,
        "lora_rank": lora.get("rank"),
        "train_mlp": lora.get("train_mlp"),
        "train_attn": lora.get("train_attn"),
        "train_unembed": False,
    }
