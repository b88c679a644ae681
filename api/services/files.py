"""Dataset uploads: validate every line, then store the object, then the row — nothing is half-stored."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import File, new_id
from api.errors import InvalidRequest, NotFound, TooLarge
from api.storage import ObjectStore
from grpo_core.data import RowError, check_row


def _validate_into(src: BinaryIO, dest: BinaryIO, max_bytes: int) -> tuple[int, int, str]:
    """Copy ``src`` to ``dest`` line by line, checking each; returns (bytes, rows, sha256)."""
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
            check_row(obj, lineno)
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
    if purpose != "fine-tune":
        raise InvalidRequest(f"purpose must be 'fine-tune', got {purpose!r}", param="purpose")
    file_id = new_id("file")
    key = f"projects/{project_id}/files/{file_id}.jsonl"
    with tempfile.NamedTemporaryFile(prefix="rft-upload-") as tmp:
        size, rows, sha = _validate_into(src, tmp, max_bytes)
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
    except Exception:
        session.rollback()
        store.delete(key)  # the row never existed: do not leave its object behind
        raise
    return row


def get_file(session: Session, project_id: str, file_id: str, *, param: str = "file_id") -> File:
    row = session.scalar(select(File).where(File.id == file_id, File.project_id == project_id))
    if row is None:
        raise NotFound(f"no file with id {file_id!r}", param=param)
    return row
