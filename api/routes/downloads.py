"""Download links: a URL that fetches a checkpoint's adapter without an ``Authorization`` header.

A browser link (the dashboard's "download" button, a ``curl`` on a GPU box without the API key) cannot send the
bearer key. ``GET …/checkpoints/{id}/download_link`` (authenticated) answers with a short-lived URL:

- on S3, the presigned URL of the tar (the bytes never pass through the API);
- on the local object store, ``/v1/downloads/{token}`` on this API, where the token names the object key and an
  expiry and is signed with HMAC-SHA256 under a key derived from the worker token. Nothing is stored: a link
  cannot be revoked before it expires (5 minutes), which is why it is short.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from api.db.models import Checkpoint as CheckpointRow
from api.deps import CurrentProject, SessionDep, SettingsDep, StoreDep
from api.errors import ERROR_RESPONSES, NotFound
from api.services import jobs as svc
from api.settings import ApiSettings
from runtime.storage import ObjectStore

LINK_SECONDS = 300  # long enough to start a download, short enough that a leaked URL soon dies
router = APIRouter(tags=["fine_tuning"], responses=ERROR_RESPONSES)


class DownloadLink(BaseModel):
    object: Literal["download_link"] = "download_link"
    url: str
    expires_at: int


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signing_key(settings: ApiSettings) -> bytes:
    # a key of its own, so a leaked link never helps forge anything the worker token guards
    return hashlib.sha256(b"rft-download-link\0" + settings.internal_token.encode()).digest()


def sign(settings: ApiSettings, key: str, filename: str, expires_at: int) -> str:
    body = _b64(json.dumps({"k": key, "f": filename, "e": expires_at}, separators=(",", ":")).encode())
    mac = hmac.new(_signing_key(settings), body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(mac)}"


def verify(settings: ApiSettings, token: str, now: float | None = None) -> tuple[str, str]:
    """The (object key, filename) a token names; NotFound for a forged, damaged or expired one (no oracle)."""
    body, _, mac = token.partition(".")
    expected = hmac.new(_signing_key(settings), body.encode(), hashlib.sha256).digest()
    try:
        ok = hmac.compare_digest(_unb64(mac), expected)
        claims = json.loads(_unb64(body)) if ok else None
    except (ValueError, UnicodeDecodeError):
        claims = None
    if not claims or claims["e"] < (time.time() if now is None else now):
        raise NotFound("this download link is invalid or has expired; ask for a new one", param="token")
    return claims["k"], claims["f"]


def presigned_adapter(store: ObjectStore, ckpt: CheckpointRow) -> tuple[str | None, str]:
    """(a presigned URL of the checkpoint's adapter tar, or None on a store without URLs; its filename)."""
    filename = f"{ckpt.id}.tar"
    url = store.presigned_url(ckpt.object_key, LINK_SECONDS, filename=filename, content_type="application/x-tar")
    return url, filename


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
    ckpt = svc.get_checkpoint(session, project, fine_tuning_job_id, checkpoint_id)
    expires_at = int(time.time()) + LINK_SECONDS
    url, filename = presigned_adapter(store, ckpt)
    if url is None:
        token = sign(settings, ckpt.object_key, filename, expires_at)
        path = request.app.url_path_for("download", token=token)
        url = (
            f"{settings.public_url.rstrip('/')}{path}"
            if settings.public_url
            else str(request.url_for("download", token=token))
        )
    return DownloadLink(url=url, expires_at=expires_at)


@router.get(
    "/v1/downloads/{token}",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The linked object."}},
)
def download(token: str, store: StoreDep, settings: SettingsDep) -> StreamingResponse:
    """The object a download link names (no API key: the signed token is the credential)."""
    key, filename = verify(settings, token)
    if not store.exists(key):
        raise NotFound("the linked object no longer exists", param="token")
    return StreamingResponse(
        store.iter_bytes(key),
        media_type="application/x-tar" if filename.endswith(".tar") else "application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )
