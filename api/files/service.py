"""Dataset uploads: validate every line, then store the object, then the row — nothing is half-stored."""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.core.errors import Conflict, InvalidRequest, NotFound, TooLarge
from api.core.pagination import Page, anchor, keyset_page
from api.db.models import TERMINAL, File, Job, new_id
from grpo_core.data.rows import RowError, check_row
from runtime.keys import file_key
from runtime.storage import ObjectStore

# The purpose of a deleted file that finished jobs still name (their training_file / validation_file are foreign
# keys, so the row stays as a tombstone: 404 everywhere, absent from lists, its bytes gone). Uploads only accept
# 'fine-tune', so no live file can have this purpose.
DELETED = "deleted"


def _check_eval_line(obj: Any, line: int) -> None:
    """An eval's item line: an object; OpenAI's ``{"item": {...}}`` shape, or the item itself."""
    if not isinstance(obj, dict):
        raise RowError(line, f"expected a JSON object, got {type(obj).__name__}")
    if "item" in obj and not isinstance(obj["item"], dict):
        raise RowError(line, "'item' must be a JSON object")


PURPOSES = {"fine-tune": check_row, "evals": _check_eval_line}


def _validate_into(src: BinaryIO, dest: IO[bytes], max_bytes: int, purpose: str) -> tuple[int, int, str]:
    """Copy ``src`` to ``dest`` line by line, checking each for ``purpose``; returns (bytes, rows, sha256)."""
    check = PURPOSES[purpose]
    digest = hashlib.sha256()
    size = rows = lineno = 0
    # readline with a limit: one enormous line can never be read into memory past the size cap.
    while raw := src.readline(max_bytes - size + 1):
        lineno += 1
        size += len(raw)
        if size > max_bytes:
            raise TooLarge(f"file is larger than the {max_bytes} byte limit", param="file")
        digest.update(raw)
        dest.write(raw)
        try:
            text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # tolerate a BOM from Windows editors
        except UnicodeDecodeError as exc:
            raise InvalidRequest(f"line {lineno}: not UTF-8 ({exc.reason} at byte {exc.start})", param="file") from None
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"line {lineno}: not valid JSON ({exc.msg})", param="file") from None
        try:
            check(obj, lineno)
        except RowError as exc:
            raise InvalidRequest(str(exc), param="file") from None
        rows += 1
    if rows == 0:
        raise InvalidRequest("file has no rows: expected JSON Lines, one object per line", param="file")
    return size, rows, digest.hexdigest()


def create_file(
    session: Session,
    store: ObjectStore,
    *,
    project_id: str,
    filename: str,
    purpose: str,
    src: BinaryIO,
    max_bytes: int,
) -> File:
    if purpose not in PURPOSES:
        raise InvalidRequest(f"purpose must be 'fine-tune' or 'evals', got {purpose!r}", param="purpose")
    file_id = new_id("file")
    key = file_key(project_id, file_id)
    with tempfile.NamedTemporaryFile(prefix="rft-upload-") as tmp:
        size, rows, sha = _validate_into(src, tmp, max_bytes, purpose)
        tmp.flush()
        store.put_file(key, Path(tmp.name))
    row = File(
        id=file_id,
        project_id=project_id,
        filename=filename[:512],
        purpose=purpose,
        bytes=size,
        row_count=rows,
        sha256=sha,
        object_key=key,
    )
    session.add(row)
    try:
        session.commit()
    except Exception:  # whatever failed the commit (re-raised): nothing half-stored, the object goes with the row
        session.rollback()
        store.delete(key)  # the row never existed: do not leave its object behind
        raise
    return row


def get_file(
    session: Session, project_id: str, file_id: str, *, param: str = "file_id", for_share: bool = False
) -> File:
    """A live file of the project (a deleted one is 404). ``for_share`` takes a row lock (PostgreSQL) that a
    concurrent delete waits for: job creation uses it so a file cannot vanish under a job being created."""
    q = select(File).where(File.id == file_id, File.project_id == project_id, File.purpose != DELETED)
    row = session.scalar(q.with_for_update(read=True) if for_share else q)
    if row is None:
        raise NotFound(f"no file with id {file_id!r}", param=param)
    return row


def list_files(
    session: Session, project_id: str, *, purpose: str | None, limit: int, after: str | None, order: str
) -> Page[File]:
    """OpenAI's ``GET /v1/files``: by ``created_at`` (``order`` asc|desc, then id), ``after`` = last id seen."""
    q = select(File).where(File.project_id == project_id, File.purpose != DELETED)
    if purpose is not None:
        q = q.where(File.purpose == purpose)
    start = anchor(after, File.id == after, File.project_id == project_id, missing=f"no file {after!r} to page after")
    keys = [File.created_at, File.id]
    return keyset_page(session, q, keys, limit=limit, descending=order == "desc", after=start)


def iter_rows(store: ObjectStore, key: str) -> Iterator[dict[str, Any]]:
    """The rows of an uploaded JSONL file (validated at upload), streamed: never the whole file in memory."""
    pending = b""
    for chunk in store.iter_bytes(key):
        *lines, pending = (pending + chunk).split(b"\n")
        yield from (json.loads(line.decode("utf-8-sig")) for line in lines if line.strip())
    if pending.strip():
        yield json.loads(pending.decode("utf-8-sig"))


def head_rows(store: ObjectStore, key: str, n: int) -> list[dict[str, Any]]:
    """The first ``n`` rows of an uploaded JSONL file, reading no more than needed."""
    return list(itertools.islice(iter_rows(store, key), n))


def delete_file(session: Session, store: ObjectStore, project_id: str, file_id: str) -> None:
    """Delete a file's bytes and its row; 409 while an unfinished job (queued, running, paused, …) uses it.

    A file only finished jobs name is kept as a tombstone row (see ``DELETED``) so those jobs still show their
    ``training_file``; any other file's row is removed. The database commits first and the object goes after:
    a crash in between leaves unreachable bytes, never a live row without its bytes.
    """
    row = session.scalar(
        select(File)
        .where(File.id == file_id, File.project_id == project_id, File.purpose != DELETED)
        .with_for_update()  # waits for a job creation holding this file FOR SHARE (PostgreSQL)
    )
    if row is None:
        raise NotFound(f"no file with id {file_id!r}", param="file_id")
    users = session.execute(
        select(Job.id, Job.status).where(or_(Job.training_file == file_id, Job.validation_file == file_id))
    ).all()
    active = [(job_id, status) for job_id, status in users if status not in TERMINAL]
    if active:
        job_id, status = active[0]
        session.rollback()
        raise Conflict(
            f"file {file_id} is used by job {job_id}, which is {status}; cancel the job or wait for it to finish",
            param="file_id",
            code="file_in_use",
        )
    key = row.object_key
    try:
        if users:
            session.execute(update(File).where(File.id == file_id).values(purpose=DELETED))
        else:
            session.execute(delete(File).where(File.id == file_id))
        session.commit()
    except IntegrityError:  # a job referencing the file committed in between (SQLite takes no row locks)
        session.rollback()
        raise Conflict(f"file {file_id} was just used by a new job", param="file_id", code="file_in_use") from None
    store.delete(key)
