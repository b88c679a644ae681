"""Evals and their runs, the user's side (no FastAPI): create, read, cancel, delete; a run is queued for the
workers (the jobs' queue: a run is small) and claimed through api.evals.leases.

A run's model is resolved once, at creation, with the inference routes' rules (api.models.served: a
base model, a fine-tuned model, a checkpoint; another project's is a 404), and its items are a file of the
project or inline ``file_content`` (stored as a file of the run).
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from api.core.errors import Conflict, InvalidRequest, NotFound
from api.core.pagination import Page, anchor, keyset_page
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import EVAL_RUN_ACTIVE, Eval, EvalOutputItem, EvalRun, EvalRunStatus, new_id, now
from api.evals.schemas import CompletionsDataSource, CustomDataSourceConfig, EvalCreate, EvalUpdate, RunCreate
from api.files.service import get_file
from api.graders.judges import check_own_judges
from api.models import served as served_models
from api.models import service as model_registry
from grpo_core.schemas.graders import GraderSpec
from runtime.storage import ObjectStore

log = logging.getLogger(__name__)
_GRADER: TypeAdapter[Any] = TypeAdapter(GraderSpec)
MAX_INLINE_ITEMS = 10_000


def _criteria(
    session: Session, settings: ApiSettings, project_id: str, raw: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The testing criteria as stored: each a grader spec jobs accept, plus ``pass_threshold`` (default 0.5: a
    0/1 grader passes on 1) and a name unique within the eval. A score_model grader's own judge is checked as a
    job's is (api.graders.judges); its run's claim carries the key."""
    out, names = [], set()
    for i, c in enumerate(raw):
        spec = dict(c)
        threshold = spec.pop("pass_threshold", 0.5)
        if not isinstance(threshold, int | float) or isinstance(threshold, bool):
            raise InvalidRequest("pass_threshold must be a number", param=f"testing_criteria[{i}].pass_threshold")
        try:
            grader = _GRADER.validate_python(spec)
        except ValidationError as exc:
            raise InvalidRequest(
                f"not a grader this service runs: {exc.errors()[0]['msg']} (at {exc.errors()[0]['loc']})",
                param=f"testing_criteria[{i}]",
            ) from None
        name = getattr(grader, "name", None) or f"{spec.get('type', 'grader')}-{i}"
        if name in names:
            raise InvalidRequest(f"two testing criteria are named {name!r}", param=f"testing_criteria[{i}].name")
        names.add(name)
        check_own_judges(session, settings, project_id, grader, f"testing_criteria[{i}]")
        out.append(grader.model_dump(mode="json", exclude_none=True) | {"name": name, "pass_threshold": threshold})
    return out


def create_eval(session: Session, settings: ApiSettings, project_id: str, body: EvalCreate) -> Eval:
    try:
        config = CustomDataSourceConfig.model_validate(body.data_source_config)
    except ValidationError:
        kind = body.data_source_config.get("type")
        raise InvalidRequest(
            f"data_source_config type {kind!r} is not supported here; use {{'type': 'custom', 'item_schema': …}}",
            param="data_source_config",
        ) from None
    schema: dict[str, Any] = {"type": "object", "properties": {"item": config.item_schema}, "required": ["item"]}
    if config.include_sample_schema:
        schema["properties"]["sample"] = {"type": "object", "properties": {"output_text": {"type": "string"}}}
        schema["required"].append("sample")
    row = Eval(
        id=new_id("eval"),
        project_id=project_id,
        name=body.name,
        data_source_config={"type": "custom", "schema": schema},
        testing_criteria=_criteria(session, settings, project_id, body.testing_criteria),
        metadata_=body.metadata,
    )
    session.add(row)
    session.commit()
    return row


def get_eval(session: Session, project_id: str, eval_id: str) -> Eval:
    row = session.get(Eval, eval_id)
    if row is None or row.project_id != project_id:
        raise NotFound(f"no eval {eval_id!r}", param="eval_id", code="eval_not_found")
    return row


def list_evals(session: Session, project_id: str, *, limit: int, after: str | None, order: str) -> Page[Eval]:
    q = select(Eval).where(Eval.project_id == project_id)
    start = anchor(after, Eval.id == after, Eval.project_id == project_id, missing=f"no eval {after!r} to page after")
    return keyset_page(session, q, [Eval.created_at, Eval.id], limit=limit, descending=order == "desc", after=start)


def update_eval(session: Session, project_id: str, eval_id: str, body: EvalUpdate) -> Eval:
    row = get_eval(session, project_id, eval_id)
    if body.name is not None:
        row.name = body.name
    if body.metadata is not None:
        row.metadata_ = body.metadata
    session.commit()
    return row


def delete_eval(session: Session, store: ObjectStore, project_id: str, eval_id: str) -> None:
    """Delete the eval, its runs and their items; refused while a run is queued or in progress (cancel it)."""
    get_eval(session, project_id, eval_id)
    if session.scalar(
        select(func.count()).select_from(EvalRun).where(EvalRun.eval_id == eval_id, EvalRun.status.in_(EVAL_RUN_ACTIVE))
    ):
        raise Conflict("a run of this eval is still queued or in progress: cancel it first", param="eval_id")
    gone = list(session.scalars(select(EvalRun).where(EvalRun.eval_id == eval_id)))
    runs = select(EvalRun.id).where(EvalRun.eval_id == eval_id)
    session.execute(delete(EvalOutputItem).where(EvalOutputItem.run_id.in_(runs)))
    session.execute(delete(EvalRun).where(EvalRun.eval_id == eval_id))
    session.execute(delete(Eval).where(Eval.id == eval_id))
    session.commit()
    _delete_inline_items(store, gone)


def _items_key(session: Session, store: ObjectStore, project_id: str, run_id: str, source: dict[str, Any]) -> str:
    """The object key of the run's items: a file of the project, or the inline content stored for the run."""
    kind = source.get("type")
    if kind == "file_id":
        file_id = source.get("id")
        if not isinstance(file_id, str):
            raise InvalidRequest("source.id must be a file id", param="data_source.source.id")
        return get_file(session, project_id, file_id, param="data_source.source.id").object_key
    if kind == "file_content":
        content = source.get("content")
        if not isinstance(content, list) or not content or len(content) > MAX_INLINE_ITEMS:
            raise InvalidRequest(
                f"source.content must be a list of 1 to {MAX_INLINE_ITEMS} {{'item': {{…}}}} objects",
                param="data_source.source.content",
            )
        if not all(isinstance(c, dict) and isinstance(c.get("item"), dict) for c in content):
            raise InvalidRequest("every content entry needs an 'item' object", param="data_source.source.content")
        key = f"projects/{project_id}/evals/{run_id}/items.jsonl"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "items.jsonl"
            path.write_text("".join(json.dumps(c) + "\n" for c in content))
            store.put_file(key, path)
        return key
    raise InvalidRequest(
        f"data_source.source type {kind!r} is not supported: use file_id or file_content",
        param="data_source.source.type",
    )


def create_run(
    session: Session,
    store: ObjectStore,
    queue: Doorbell,
    settings: ApiSettings,
    *,
    project_id: str,
    eval_id: str,
    body: RunCreate,
) -> EvalRun:
    """Check the data source, resolve the model, store the run ``queued`` and ring the workers."""
    ev = get_eval(session, project_id, eval_id)
    kind = body.data_source.get("type")
    if kind != "completions":
        raise InvalidRequest(
            f"run data_source type {kind!r} is not supported here: use 'completions' (the service samples the model)",
            param="data_source.type",
        )
    try:
        ds = CompletionsDataSource.model_validate(body.data_source)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InvalidRequest(
            f"{err['msg']} (at data_source.{'.'.join(map(str, err['loc']))})", param="data_source"
        ) from None
    base = [ds.model] if model_registry.find(session, settings, ds.model) is not None else []
    target = served_models.resolve(session, project_id, ds.model, base)
    run_id = new_id("evalrun")
    key = _items_key(session, store, project_id, run_id, ds.source)
    row = EvalRun(
        id=run_id,
        eval_id=ev.id,
        project_id=project_id,
        name=body.name or f"{ds.model} on {eval_id}",
        model=ds.model,
        data_source=ds.model_dump(mode="json"),
        target={"base": target.base, "adapter_key": target.object_key},
        file_key=key,
        status=EvalRunStatus.queued,
        metadata_=body.metadata,
    )
    session.add(row)
    session.commit()
    try:
        queue.ring_eval(row.id)
        row.enqueued_at = now()
        session.commit()
    except Exception:  # broker down: the run stays queued and the reaper rings again
        log.exception("enqueue failed for eval run %s", row.id)
    return row


def get_run(session: Session, project_id: str, eval_id: str, run_id: str) -> EvalRun:
    row = session.get(EvalRun, run_id)
    if row is None or row.project_id != project_id or row.eval_id != eval_id:
        raise NotFound(f"no run {run_id!r} of eval {eval_id!r}", param="run_id", code="run_not_found")
    return row


def list_runs(
    session: Session, project_id: str, eval_id: str, *, limit: int, after: str | None, order: str, status: str | None
) -> Page[EvalRun]:
    get_eval(session, project_id, eval_id)
    q = select(EvalRun).where(EvalRun.eval_id == eval_id)
    if status is not None:
        q = q.where(EvalRun.status == status)
    start = anchor(after, EvalRun.id == after, EvalRun.eval_id == eval_id, missing=f"no run {after!r} to page after")
    keys = [EvalRun.created_at, EvalRun.id]
    return keyset_page(session, q, keys, limit=limit, descending=order == "desc", after=start)


def cancel_run(session: Session, project_id: str, eval_id: str, run_id: str) -> EvalRun:
    """A queued or running run stops being written: the worker's next post is refused and it stops."""
    row = get_run(session, project_id, eval_id, run_id)
    if row.status in EVAL_RUN_ACTIVE:
        row.status, row.finished_at, row.claim_id = EvalRunStatus.canceled, now(), None
        session.commit()
    return row


def _delete_inline_items(store: ObjectStore, runs: list[EvalRun]) -> None:
    """The items a run was created with inline (``file_content``) are the run's own: they go with it."""
    for run in runs:
        if run.file_key.endswith(f"/evals/{run.id}/items.jsonl"):
            try:
                store.delete(run.file_key)
            except Exception:  # unreachable bytes at worst; the rows are gone
                log.exception("could not delete %s", run.file_key)


def delete_run(session: Session, store: ObjectStore, project_id: str, eval_id: str, run_id: str) -> None:
    row = get_run(session, project_id, eval_id, run_id)
    if row.status in EVAL_RUN_ACTIVE:
        raise Conflict("the run is still queued or in progress: cancel it first", param="run_id")
    session.execute(delete(EvalOutputItem).where(EvalOutputItem.run_id == run_id))
    session.delete(row)
    session.commit()
    _delete_inline_items(store, [row])


def list_items(
    session: Session,
    project_id: str,
    eval_id: str,
    run_id: str,
    *,
    limit: int,
    after: str | None,
    order: str,
    status: str | None,
) -> Page[EvalOutputItem]:
    get_run(session, project_id, eval_id, run_id)
    q = select(EvalOutputItem).where(EvalOutputItem.run_id == run_id)
    if status is not None:
        q = q.where(EvalOutputItem.status == status)
    start = anchor(
        after, EvalOutputItem.id == after, EvalOutputItem.run_id == run_id, missing=f"no item {after!r} to page after"
    )
    keys = [EvalOutputItem.datasource_item_id, EvalOutputItem.id]
    return keyset_page(session, q, keys, limit=limit, descending=order == "desc", after=start)


def get_item(session: Session, project_id: str, eval_id: str, run_id: str, item_id: str) -> EvalOutputItem:
    get_run(session, project_id, eval_id, run_id)
    row = session.get(EvalOutputItem, item_id)
    if row is None or row.run_id != run_id:
        raise NotFound(f"no output item {item_id!r} in run {run_id!r}", param="output_item_id")
    return row
