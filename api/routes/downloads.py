"""Download links (api.services.downloads): a URL that fetches a checkpoint's adapter without an
``Authorization`` header, and the route that serves the local store's signed links."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from api.deps import CurrentProject, SessionDep, SettingsDep, StoreDep
from api.errors import ERROR_RESPONSES
from api.schemas.jobs import DownloadLink
from api.services import access
from api.services.downloads import TAR, adapter_link, linked_object

router = APIRouter(tags=["fine_tuning"], responses=ERROR_RESPONSES)


@router.get("/v1/fine_tuning/jobs/{fine_tuning_job_id}/checkpoints/{checkpoint_id}/download_link")
def checkpoint_download_link(
    fine_tuning_job_id: str,
    checkpoint_id: str,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    project: CurrentProject,
) -> DownloadLink:
    """A URL that downloads the checkpoint's adapter tar for 5 minutes, no API key needed (for links)."""
    link = adapter_link(store, settings, access.get_checkpoint(session, project, fine_tuning_job_id, checkpoint_id))
    if link.url is not None:
        return DownloadLink(url=link.url, expires_at=link.expires_at)
    if settings.public_url:  # behind a TLS proxy: where users reach the API, not what this request says
        url = f"{settings.public_url.rstrip('/')}{request.app.url_path_for('download', token=link.token)}"
    else:
        url = str(request.url_for("download", token=link.token))
    return DownloadLink(url=url, expires_at=link.expires_at)


@router.get(
    "/v1/downloads/{token}",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The linked object."}},
)
def download(token: str, store: StoreDep, settings: SettingsDep) -> StreamingResponse:
    """The object a download link names (no API key: the signed token is the credential)."""
    key, filename = linked_object(store, settings, token)
    return StreamingResponse(
        store.iter_bytes(key),
        media_type=TAR if filename.endswith(".tar") else "application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )
