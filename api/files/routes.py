from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Query, UploadFile
from fastapi.responses import StreamingResponse

from api.core.deps import CurrentProject, SessionDep, SettingsDep, StoreDep
from api.core.errors import ERROR_RESPONSES
from api.core.idempotency import idempotent, upload_meaning
from api.core.pagination import ListResponse
from api.files import service as svc
from api.files.schemas import FileDeleted, FileObject

router = APIRouter(prefix="/v1/files", tags=["files"], responses=ERROR_RESPONSES)


@router.post("", status_code=201)
@idempotent(status_code=201, meaning=upload_meaning)
def create_file(
    file: UploadFile,
    purpose: Annotated[str, Form()],
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    project: CurrentProject,
) -> FileObject:
    """Upload a JSONL dataset: one JSON object per line with ``prompt`` (string) or ``messages`` (list).

    Every line is checked before anything is stored; the first bad line is named in a 400. With an
    ``Idempotency-Key`` a retry (same purpose, filename and bytes) replays the first response.
    """
    row = svc.create_file(
        session,
        store,
        project_id=project,
        filename=file.filename or "upload.jsonl",
        purpose=purpose,
        src=file.file,
        max_bytes=settings.max_upload_bytes,
    )
    return FileObject.from_row(row)


@router.get("/{file_id}")
def retrieve_file(file_id: str, session: SessionDep, project: CurrentProject) -> FileObject:
    return FileObject.from_row(svc.get_file(session, project, file_id))


@router.get("")
def list_files(
    session: SessionDep,
    project: CurrentProject,
    purpose: str | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 10_000,
    after: str | None = None,
    order: Literal["asc", "desc"] = "desc",
) -> ListResponse[FileObject]:
    """The project's files, newest first by default (OpenAI's defaults: limit 10,000, ``after`` cursor)."""
    page = svc.list_files(session, project, purpose=purpose, limit=limit, after=after, order=order)
    return ListResponse[FileObject].page([FileObject.from_row(r) for r in page.items], page.has_more)


@router.delete("/{file_id}")
def delete_file(file_id: str, session: SessionDep, store: StoreDep, project: CurrentProject) -> FileDeleted:
    """Delete the file and its bytes. 409 ``file_in_use`` while an unfinished job (queued, running, paused, …)
    trains on it: cancel the job first. Finished jobs keep naming the file, which is then 404."""
    svc.delete_file(session, store, project, file_id)
    return FileDeleted(id=file_id)


@router.get(
    "/{file_id}/content",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The uploaded bytes, unchanged"}},
)
def file_content(file_id: str, session: SessionDep, store: StoreDep, project: CurrentProject) -> StreamingResponse:
    """The uploaded JSONL, byte for byte (OpenAI's ``files.content``)."""
    row = svc.get_file(session, project, file_id)
    return StreamingResponse(
        store.iter_bytes(row.object_key),
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{row.id}.jsonl"'},
    )
