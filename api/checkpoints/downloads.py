"""A checkpoint's tar handed out, a job's or a training run's: streamed from the local store or a 302 to a presigned
URL (``tar_response``, what both content routes answer), and links that fetch it without an ``Authorization``
header.

A browser link (the dashboard's "download" button, a ``curl`` on a GPU box without the API key) cannot send the
bearer key, so an authenticated request gets a short-lived link instead:

- on S3, the presigned URL of the tar (the bytes never pass through the API);
- on the local object store, a token for ``/v1/downloads/{token}`` that names the object key and an expiry,
  signed with HMAC-SHA256 under a key derived from the worker token. Nothing is stored: a link cannot be revoked
  before it expires (5 minutes), which is why it is short.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from fastapi.responses import RedirectResponse, Response, StreamingResponse

from api.core.errors import NotFound
from api.db.models import Checkpoint, TrainingCheckpoint
from runtime.settings import CommonSettings
from runtime.storage import ObjectStore

LINK_SECONDS = 300  # long enough to start a download, short enough that a leaked URL soon dies
TAR = "application/x-tar"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signing_key(settings: CommonSettings) -> bytes:
    # a key of its own, so a leaked link never helps forge anything the worker token guards
    return hashlib.sha256(b"rft-download-link\0" + settings.internal_token.encode()).digest()


def sign(settings: CommonSettings, key: str, filename: str, expires_at: int) -> str:
    body = _b64(json.dumps({"k": key, "f": filename, "e": expires_at}, separators=(",", ":")).encode())
    mac = hmac.new(_signing_key(settings), body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(mac)}"


def verify(settings: CommonSettings, token: str, now: float | None = None) -> tuple[str, str]:
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


def presigned_adapter(store: ObjectStore, ckpt: Checkpoint | TrainingCheckpoint) -> tuple[str | None, str]:
    """(a presigned URL of the checkpoint's tar, or None on a store without URLs; its filename): a job's adapter, or
    a training-API checkpoint."""
    filename = f"{ckpt.id}.tar"
    return store.presigned_url(ckpt.object_key, LINK_SECONDS, filename=filename, content_type=TAR), filename


def tar_response(store: ObjectStore, ckpt: Checkpoint | TrainingCheckpoint) -> Response:
    """A checkpoint's tar as a response: a 302 to a presigned URL (5 minutes) on a store that has them, so the
    bytes never pass through the API, else streamed from the store."""
    url, filename = presigned_adapter(store, ckpt)
    if url is not None:
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
    return StreamingResponse(
        store.iter_bytes(ckpt.object_key),
        media_type=TAR,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@dataclass(frozen=True)
class AdapterLink:
    """Either the store's own URL, or a token for this API's ``/v1/downloads/{token}``."""

    url: str | None
    token: str | None
    expires_at: int


def adapter_link(store: ObjectStore, settings: CommonSettings, ckpt: Checkpoint) -> AdapterLink:
    expires_at = int(time.time()) + LINK_SECONDS
    url, filename = presigned_adapter(store, ckpt)
    token = None if url is not None else sign(settings, ckpt.object_key, filename, expires_at)
    return AdapterLink(url, token, expires_at)


def linked_object(store: ObjectStore, settings: CommonSettings, token: str) -> tuple[str, str]:
    """The (object key, filename) a download token opens, once it is verified and the object still exists."""
    key, filename = verify(settings, token)
    if not store.exists(key):
        raise NotFound("the linked object no longer exists", param="token")
    return key, filename
