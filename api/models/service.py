"""The model registry: base models live in the object store with one row of metadata each (no FastAPI).

``register`` takes a source, inspects it without loading weights (grpo_core.models.files: config, tokenizer and
safetensors headers; no torch in the API), uploads every file under ``models/<id>/<digest[:16]>-<random>/`` and then
adds the row, so a half-uploaded model is never visible; a failed upload removes what it wrote. Sources:

- a folder on this machine (``/path/to/hf-folder``, or ``file://…``);
- an S3 prefix (``s3://bucket/prefix/``) readable with the service's credentials;
- a hub id (``hf://org/name[@revision]``) resolved from the operator's offline ``huggingface_hub`` cache
  (HF_HOME / HF_HUB_CACHE): nothing is ever downloaded from a hub.

Workers get the file list in their claim and fetch it into a node-local cache keyed by ``digest``
(worker.model_cache). Models the operator put in the catalog folder (MODEL_CATALOG_DIR) are still offered
(``source: "catalog"``); a registered model of the same id wins.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.core.errors import Conflict, InvalidRequest, NotFound
from api.db.models import EVAL_RUN_ACTIVE, UNFINISHED, EvalRun, Job, JobStatus, RegisteredModel
from grpo_core.models.catalog import MODEL_ID_RE, list_models
from grpo_core.models.files import TOKENIZER_FILES, ModelFolderError, inspect_model_folder
from runtime.internal import ModelFileRef, ModelSource
from runtime.settings import CommonSettings
from runtime.storage import ObjectStore

PREFIX = "models/"
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class BaseModelEntry:
    """A base model the service offers: a registry row, or a folder of the operator's catalog (row None)."""

    id: str
    row: RegisteredModel | None
    catalog_dir: Path | None


def available(session: Session, settings: CommonSettings) -> dict[str, BaseModelEntry]:
    """Every base model by id: the registry's rows, then catalog folders not shadowed by a row."""
    out = {r.id: BaseModelEntry(r.id, r, None) for r in session.scalars(select(RegisteredModel))}
    for name in list_models(settings.models_dir):
        out.setdefault(name, BaseModelEntry(name, None, settings.models_dir / name))
    return dict(sorted(out.items()))


def find(session: Session, settings: CommonSettings, model_id: str) -> BaseModelEntry | None:
    """One base model by id (a row, else a catalog folder), without listing them all: what a request for one model
    needs (every inference request asks)."""
    row = session.get(RegisteredModel, model_id)
    if row is not None:
        return BaseModelEntry(model_id, row, None)
    if MODEL_ID_RE.match(model_id) and (settings.models_dir / model_id / "config.json").is_file():
        return BaseModelEntry(model_id, None, settings.models_dir / model_id)
    return None


def source_of(row: RegisteredModel) -> ModelSource:
    """What a worker's claim carries to fetch the model (runtime.internal.ModelSource)."""
    return ModelSource(
        id=row.id,
        digest=row.digest,
        object_prefix=row.object_prefix,
        hub_id=row.hub_id,
        files=[ModelFileRef(**f) for f in row.files],
    )


@contextlib.contextmanager
def _local_folder(source: str, store: ObjectStore) -> Iterator[Path]:
    """The source as a folder on this machine (a temporary copy for s3:// and nothing copied otherwise)."""
    if source.startswith("s3://"):
        bucket, _, prefix = source[5:].partition("/")
        with tempfile.TemporaryDirectory(prefix="rft-model-") as tmp:
            _download_s3_prefix(store, bucket, prefix.rstrip("/") + "/", Path(tmp))
            yield Path(tmp)
        return
    if source.startswith("hf://"):
        yield _hub_cache_folder(source[5:])
        return
    yield Path(source.removeprefix("file://")).expanduser()


def _download_s3_prefix(store: ObjectStore, bucket: str, prefix: str, dest: Path) -> None:
    from runtime.storage import S3Store

    if not isinstance(store, S3Store):
        raise InvalidRequest("an s3:// source needs the service's object store to be S3", param="source")
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        pages = store.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
        for key in keys:
            rel = key[len(prefix) :]
            if not rel or rel.endswith("/"):
                continue
            target = (dest / rel).resolve()
            if not target.is_relative_to(dest.resolve()):
                raise InvalidRequest(f"object key escapes the prefix: {key!r}", param="source")
            target.parent.mkdir(parents=True, exist_ok=True)
            store.client.download_file(bucket, key, str(target))
    except (BotoCoreError, ClientError) as exc:
        raise InvalidRequest(f"cannot read s3://{bucket}/{prefix}: {exc}", param="source") from None
    if not keys:
        raise InvalidRequest(f"nothing under s3://{bucket}/{prefix}", param="source")


def _hub_cache_folder(spec: str) -> Path:
    """The snapshot folder of ``org/name[@revision]`` in the offline huggingface_hub cache (never a download)."""
    repo_id, _, revision = spec.partition("@")
    if not _HUB_ID.match(repo_id):
        raise InvalidRequest(f"not a hub id: {repo_id!r} (expected org/name)", param="source")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, revision=revision or None, local_files_only=True))
    except LocalEntryNotFoundError:
        raise InvalidRequest(
            f"{repo_id} is not in this machine's huggingface_hub cache (HF_HUB_CACHE); the service never "
            "downloads from a hub: fill the cache offline, or register a folder or an s3:// prefix",
            param="source",
            code="model_not_in_cache",
        ) from None


def register(
    session: Session,
    store: ObjectStore,
    source: str,
    *,
    model_id: str | None = None,
    hub_id: str | None = None,
) -> RegisteredModel:
    """Inspect ``source``, upload its files, then add the row (InvalidRequest naming what is missing, Conflict
    when the id is taken)."""
    if hub_id is not None and not _HUB_ID.match(hub_id):
        raise InvalidRequest(f"hub_id must look like org/name, not {hub_id!r}", param="hub_id")
    if source.startswith("hf://") and hub_id is None:
        hub_id = source[5:].partition("@")[0]
    with _local_folder(source, store) as folder:
        named = source.rstrip("/").rsplit("/", 1)[-1] if source.startswith("s3://") else folder.resolve().name
        model_id = model_id or (hub_id.split("/")[-1] if hub_id else named)
        if not MODEL_ID_RE.match(model_id):
            raise InvalidRequest(f"model id {model_id!r} must be 1-128 letters, digits, '.', '_' or '-'", param="id")
        if session.get(RegisteredModel, model_id) is not None:
            raise Conflict(f"model {model_id!r} is already registered", param="id", code="model_exists")
        try:
            info = inspect_model_folder(folder)
        except ModelFolderError as exc:
            raise InvalidRequest(str(exc), param="source", code="not_a_causal_lm") from None
        # one prefix per registration: a concurrent registration of the same id (one of them is refused) or a
        # removal of an earlier one never deletes this one's files
        prefix = f"{PREFIX}{model_id}/{info.digest[:16]}-{secrets.token_hex(4)}/"
        written: list[str] = []
        try:
            for f in info.files:
                store.put_file(prefix + f.name, folder / f.name)
                written.append(prefix + f.name)
            row = RegisteredModel(
                id=model_id,
                source=source,
                hub_id=hub_id,
                architecture=info.architecture,
                model_type=info.model_type,
                parameter_count=info.parameter_count,
                dtype=info.dtype,
                context_length=info.context_length,
                chat_template=info.chat_template,
                license=info.license,
                files=[{"name": f.name, "size": f.size, "sha256": f.sha256} for f in info.files],
                digest=info.digest,
                size=info.size,
                object_prefix=prefix,
            )
            session.add(row)
            session.commit()
        except IntegrityError:
            session.rollback()
            _delete_all(store, written)
            raise Conflict(f"model {model_id!r} is already registered", param="id", code="model_exists") from None
        except BaseException:
            session.rollback()
            _delete_all(store, written)
            raise
    return row


def _delete_all(store: ObjectStore, keys: list[str]) -> None:
    for key in keys:
        with contextlib.suppress(Exception):
            store.delete(key)


def get(session: Session, model_id: str) -> RegisteredModel:
    row = session.get(RegisteredModel, model_id)
    if row is None:
        raise NotFound(f"no registered model {model_id!r}", param="id", code="model_not_found")
    return row


def remove(session: Session, store: ObjectStore, model_id: str) -> RegisteredModel:
    """Delete the row, then the files; refused while an unfinished job (paused ones too: they resume) or a queued
    or running eval run uses the model."""
    row = get(session, model_id)
    users = [*UNFINISHED, JobStatus.paused]
    busy = session.scalar(select(Job.id).where(Job.model == model_id, Job.status.in_(users)).limit(1))
    if busy is None:
        runs = session.scalars(select(EvalRun).where(EvalRun.status.in_(EVAL_RUN_ACTIVE)))
        busy = next((r.id for r in runs if r.target.get("base") == model_id), None)
    if busy is not None:
        raise Conflict(f"{busy} still uses {model_id!r}: cancel it or wait", param="id", code="model_in_use")
    session.delete(row)
    session.commit()
    for f in row.files:
        with contextlib.suppress(Exception):
            store.delete(row.object_prefix + f["name"])
    return row


def tokenizer_folder(entry: BaseModelEntry, store: ObjectStore, cache_dir: Path) -> Path | None:
    """A local folder with the model's tokenizer files (for prompt counts): the catalog folder itself, or the
    registry's tokenizer files fetched once into ``cache_dir/<digest>`` (a few MB; atomic). None when the model
    has no tokenizer.json (a catalog folder without one)."""
    if entry.row is None:
        folder = entry.catalog_dir
        return folder if folder is not None and (folder / "tokenizer.json").is_file() else None
    row = entry.row
    target = cache_dir / row.digest
    if (target / "tokenizer.json").is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache_dir, prefix=".part-"))
    try:
        names = {f["name"] for f in row.files}
        for name in TOKENIZER_FILES:
            if name in names:
                store.get_file(row.object_prefix + name, tmp / name)
        try:
            tmp.rename(target)
        except OSError:  # another request fetched it first
            if not (target / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
