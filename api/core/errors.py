"""One error shape everywhere: ``{"error": {"type", "code", "message", "param"}}`` (OpenAI's, plus our code).

Services raise ``ServiceError`` subclasses; the handlers below turn them, and FastAPI's own validation errors,
into that shape, so a client never has to parse two kinds of error.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException


class ErrorBody(BaseModel):
    type: str
    code: str | None = None
    message: str
    param: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


class ServiceError(Exception):
    status_code = 400
    type = "invalid_request_error"

    def __init__(
        self, message: str, *, param: str | None = None, code: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}


class InvalidRequest(ServiceError):
    status_code = 400


class Unauthorized(ServiceError):
    status_code = 401
    type = "authentication_error"


class Forbidden(ServiceError):
    status_code = 403
    type = "permission_error"


class NotFound(ServiceError):
    status_code = 404
    type = "not_found_error"


class Conflict(ServiceError):
    status_code = 409
    type = "conflict_error"


class TooLarge(ServiceError):
    status_code = 413


class Unprocessable(ServiceError):
    status_code = 422


class TooManyRequests(ServiceError):
    status_code = 429
    type = "rate_limit_error"


class Unavailable(ServiceError):
    """A component this request needs (the inference server) is not configured or not answering."""

    status_code = 503
    type = "service_unavailable_error"


class UpstreamError(ServiceError):
    """The inference server refused or failed the request: its status when a client error (4xx), else 502."""

    def __init__(self, message: str, *, status_code: int = 502, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.status_code = status_code
        self.type = "server_error" if status_code >= 500 else "invalid_request_error"


def error_json(
    status: int, type_: str, message: str, param: str | None, code: str | None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"type": type_, "code": code, "message": message, "param": param}}
    return JSONResponse(status_code=status, content=body, headers=headers)


def _loc_to_param(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    # Discriminated unions add the tag to the path (grader.python.source): drop it, users never wrote it.
    return ".".join(p for p in parts if p not in ("python", "string_check"))


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        headers = exc.headers
        if exc.status_code == 409 and "Retry-After" not in headers:
            # OpenAI's SDKs retry every 409 as a lock timeout; a state conflict (cancel a finished job, delete a
            # file in use) never resolves by retrying, so say so. A 409 with Retry-After (in flight) is retried.
            headers = {**headers, "x-should-retry": "false"}
        return error_json(exc.status_code, exc.type, exc.message, exc.param, exc.code, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errs: list[dict[str, Any]] = jsonable_encoder(exc.errors())
        first: dict[str, Any] = errs[0] if errs else {"loc": (), "msg": "invalid request"}
        if first.get("type") == "json_invalid":
            ctx = first.get("ctx", {}).get("error", "")
            return error_json(
                400,
                "invalid_request_error",
                f"request body is not valid JSON: {ctx}".rstrip(": "),
                None,
                "invalid_json",
            )
        param = _loc_to_param(tuple(first.get("loc", ())))
        message = f"{param}: {first['msg']}" if param else first["msg"]
        if len(errs) > 1:
            message += f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})"
        return error_json(422, "invalid_request_error", message, param or None, "validation_error")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        type_ = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return error_json(exc.status_code, type_, str(exc.detail), None, None)


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": desc}
    for code, desc in {
        400: "Bad request",
        401: "Missing or wrong API key",
        404: "Not found",
        409: "Conflict with the object's state",
        413: "Upload too large",
        422: "Invalid parameters",
        429: "Rate limit or quota exceeded (Retry-After says when to try again)",
    }.items()
}
