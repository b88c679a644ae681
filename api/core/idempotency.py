"""The ``Idempotency-Key`` header for POST routes: ``@idempotent(status_code=201)`` on the route function.

The rules live in api.core.idempotency_store; this module only knows HTTP: it reads the header, fingerprints the
request, and turns the stored outcome into a response. When a key is given, the first response is also sent
from the stored JSON, so a replay is byte for byte what the first caller received. The decorator adds the
header's dependency to the route's signature, so the route itself stays "parse, call the service, shape".
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any, BinaryIO, TypeVar, cast

from fastapi import Depends, Header, Request, UploadFile
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.core import idempotency_store as svc
from api.core.deps import CurrentProject, SessionDep
from api.core.errors import InvalidRequest, ServiceError

log = logging.getLogger(__name__)
REPLAYED = "Idempotent-Replayed"

KeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Retry-safe POST: the same key with the same request replays the first response (24 h).",
    ),
]


class Idempotency:
    """One request's idempotency context; ``run`` does the work at most once per (project, key)."""

    def __init__(
        self, request: Request, session: Session, project_id: str, key: str | None, body: bytes | None = None
    ) -> None:
        self.request = request
        self.session = session
        self.project_id = project_id
        self.key = key
        self.body = body
        self.method_path = f"{request.method} {request.url.path}"

    def run(self, work: Callable[[], Any], *, status_code: int, meaning: Iterable[bytes] | None = None) -> Any:
        """Return ``work()``'s result (no key), or a JSONResponse FastAPI sends as is (stored or replayed).

        ``meaning`` is what identifies the request (hashed lazily, only when a key is given); JSON routes leave
        it out and their canonical body is used.
        """
        if self.key is None:
            return work()
        parts = meaning if meaning is not None else [svc.canonical_json(self.body or b"")]
        ttl = self.request.app.state.settings.idempotency_ttl_seconds
        ident = {"project_id": self.project_id, "key": self.key}
        replay = svc.begin(
            self.session,
            **ident,
            method_path=self.method_path,
            request_hash=svc.fingerprint(self.method_path, parts),
            ttl_seconds=ttl,
        )
        if replay is not None:
            return JSONResponse(replay.body, status_code=replay.status_code, headers={REPLAYED: "true"})
        try:
            result = work()
        except (ServiceError, StarletteHTTPException) as exc:
            if exc.status_code < 500:  # refused before the work was done: nothing to replay, key reusable
                self.session.rollback()
                svc.release(self.session, **ident)
                raise
            self.session.rollback()
            return self._store(exc.status_code, _error_body(exc))
        except Exception:  # the endpoint's boundary: whatever broke it is stored as its 500
            # The endpoint started and broke: Stripe saves the 500, so a retry cannot do the work twice.
            log.exception("%s failed under Idempotency-Key %r", self.method_path, self.key)
            self.session.rollback()
            body = {
                "error": {
                    "type": "server_error",
                    "code": "internal_error",
                    "message": "internal error while processing the request (saved under this Idempotency-Key)",
                    "param": None,
                }
            }
            return self._store(500, body)
        self.session.commit()  # the work's own transaction is over (and any read it left open, for SQLite)
        return self._store(status_code, jsonable_encoder(result))

    def _store(self, status_code: int, body: dict[str, Any]) -> JSONResponse:
        svc.complete(self.session, project_id=self.project_id, key=self.key or "", status_code=status_code, body=body)
        return JSONResponse(body, status_code=status_code)


def _error_body(exc: ServiceError | StarletteHTTPException) -> dict[str, Any]:
    if isinstance(exc, ServiceError):
        return {"error": {"type": exc.type, "code": exc.code, "message": exc.message, "param": exc.param}}
    return {"error": {"type": "server_error", "code": None, "message": str(exc.detail), "param": None}}


def _checked(key: str | None) -> str | None:
    if key is not None and not 1 <= len(key) <= svc.MAX_KEY_LENGTH:
        raise InvalidRequest(f"Idempotency-Key must be 1 to {svc.MAX_KEY_LENGTH} characters", param=svc.PARAM)
    return key


def idempotency(
    request: Request, session: SessionDep, project: CurrentProject, idempotency_key: KeyHeader = None
) -> Idempotency:
    """For routes that pass their own ``meaning`` (uploads: purpose, filename and the file's bytes)."""
    return Idempotency(request, session, project, _checked(idempotency_key))


async def json_idempotency(
    request: Request, session: SessionDep, project: CurrentProject, idempotency_key: KeyHeader = None
) -> Idempotency:
    """For JSON routes: FastAPI has already read the body, so this only takes the cached bytes."""
    key = _checked(idempotency_key)
    return Idempotency(request, session, project, key, await request.body() if key is not None else None)


def upload_meaning(purpose: str, file: UploadFile, **_: Any) -> Iterator[bytes]:
    """What identifies an upload (``meaning`` of an ``@idempotent`` upload route, called with its arguments):
    purpose + filename + the file's bytes (never raw multipart: its boundary varies); leaves the file at offset
    0 for the upload itself."""
    fileobj: BinaryIO = file.file
    yield json.dumps({"filename": file.filename, "purpose": purpose}, sort_keys=True).encode() + b"\n"
    fileobj.seek(0)
    try:
        while chunk := fileobj.read(1 << 20):
            yield chunk
    finally:
        fileobj.seek(0)


IdempotencyDep = Annotated[Idempotency, Depends(idempotency)]
JsonIdempotencyDep = Annotated[Idempotency, Depends(json_idempotency)]


Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def idempotent(
    *, status_code: int, meaning: Callable[..., Iterable[bytes]] | None = None
) -> Callable[[Endpoint], Endpoint]:
    """Make a POST route honour ``Idempotency-Key``: its body runs at most once per (project, key) and a retry
    gets the first response replayed. ``meaning`` (called with the route's arguments) is what identifies a
    request that is not plain JSON (an upload); JSON routes are identified by their canonical body.

    The wrapper's signature is the route's plus the dependency, so FastAPI still reads the route's parameters
    and response model from it (and the OpenAPI spec is unchanged).
    """

    def wrap(endpoint: Endpoint) -> Endpoint:
        signature = inspect.signature(endpoint, eval_str=True)
        dep = IdempotencyDep if meaning is not None else JsonIdempotencyDep
        extra = inspect.Parameter("idempotency_", inspect.Parameter.KEYWORD_ONLY, annotation=dep)

        @functools.wraps(endpoint)
        def route(*args: Any, idempotency_: Idempotency, **kwargs: Any) -> Any:
            return idempotency_.run(
                functools.partial(endpoint, *args, **kwargs),
                status_code=status_code,
                meaning=None if meaning is None else meaning(**kwargs),
            )

        wrapper: Any = route  # what inspect.signature, and so FastAPI, reads
        wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])
        return cast(Endpoint, wrapper)

    return wrap
