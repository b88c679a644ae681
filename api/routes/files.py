from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, UploadFile

from api.deps import CurrentProject, SessionDep, SettingsDep, StoreDep
from api.errors import ERROR_RESPONSES
from api.idempotency import IdempotencyDep, upload_meaning
from api.schemas.files import FileObject
from api.services import files as svc

router = APIRouter(prefix="/v1/files", tags=["files"], responses=ERROR_RESPONSES)


def to_schema(row) -> FileObject:  # type: ignore[no-untyped-def]
    return FileObject(
        id=row.id,
        bytes=row.bytes,
        created_at=row.created_at,
        filename=row.filename,
        purpose=row.purpose,
        row_count=row.row_count,
        sha256=row.sha256,
    )


@router.post("", status_code=201)
def create_file(
    file: UploadFile,
    purpose: Annotated[str, Form()],
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    project: CurrentProject,
    idem: IdempotencyDep,
) -> FileObject:
    """Upload a JSONL dataset: one JSON object per line with ``prompt`` (string) or ``messages`` (list).

    Every line is checked before anything is stored; the first bad line is named in a 400. With an
    ``Idempotency-Key`` a retry (same purpose, filename and bytes) replays the first response.
    """
    return idem.run(
        lambda: to_schema(
            svc.create_file(
                session,
                store,
                project_id=project,
                filename=file.filename or "upload.jsonl",
                purpose=purpose,
                src=file.file,
                max_bytes=settings.max_upload_bytes,
            )
        ),
        status_code=201,
        meaning=upload_meaning(purpose, file.filename, file.file),
    )


@router.get("/{file_id}")
def retrieve_file(file_id: str, session: SessionDep, project: CurrentProject) -> FileObject:
    return to_schema(svc.get_file(session, project, file_id))
