"""Configuration, the generated client, and the API's error shape turned into one clean line for the user.

Every call goes through ``call``: a 4xx/5xx becomes an ``ApiError`` carrying the service's
``{"error": {"type", "code", "message", "param"}}``, which the app prints without a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

import httpx
from rft_client import AuthenticatedClient, Client
from rft_client.api.fine_tuning import list_events
from rft_client.models import JobEvent, ListResponseJobEvent
from rft_client.types import UNSET, Response, Unset

Model = TypeVar("Model")

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
USER_AGENT = "rft-cli/0.1"


class CliError(Exception):
    """A failure meant for the user: printed as one line on stderr, then exit ``exit_code`` (no traceback)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ApiError(CliError):
    """The service said no (HTTP status >= 400), in its error shape."""

    def __init__(
        self, status: int, message: str, *, type_: str | None = None, code: str | None = None, param: str | None = None
    ) -> None:
        parts = [f"{status}", type_ or "", f"({code})" if code else ""]
        head = " ".join(p for p in parts if p)
        super().__init__(f"{head}: {message}" + (f" [param: {param}]" if param else ""))
        self.status, self.type, self.code, self.param = status, type_, code, param

    @classmethod
    def from_response(cls, resp: Response[Any]) -> ApiError:
        """Read ``{"error": {...}}``; anything else (a proxy's HTML, FastAPI's default) is shown trimmed."""
        return cls.from_body(int(resp.status_code), resp.content)

    @classmethod
    def from_body(cls, status: int, content: bytes) -> ApiError:
        """``from_response`` for a raw status and body (a streamed answer read with httpx)."""
        try:
            body = json.loads(content)
        except ValueError:
            body = None
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return cls(status, str(err["message"]), type_=err.get("type"), code=err.get("code"), param=err.get("param"))
        if isinstance(body, dict) and "detail" in body:
            return cls(status, json.dumps(body["detail"])[:500])
        text = content.decode("utf-8", errors="replace").strip() or "(empty response)"
        return cls(status, text[:500])


@dataclass
class Config:
    """Where the service is and how to authenticate (flags win over RFT_BASE_URL / RFT_API_KEY)."""

    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    timeout: float = 60.0
    _client: Client | AuthenticatedClient | None = field(default=None, repr=False)

    def client(self) -> Client | AuthenticatedClient:
        """One generated client per invocation (its httpx connection pool is reused by every call)."""
        if self._client is None:
            self._client = make_client(self)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.get_httpx_client().close()
            self._client = None


def make_client(config: Config) -> Client | AuthenticatedClient:
    """The generated client. Redirects are followed: an S3-backed service answers an adapter download with a
    302 to a presigned URL (httpx drops the Authorization header when the host changes)."""
    timeout = httpx.Timeout(config.timeout, connect=10.0)
    common: dict[str, Any] = {
        "base_url": config.base_url.rstrip("/"),
        "timeout": timeout,
        "follow_redirects": True,
        "headers": {"User-Agent": USER_AGENT},
    }
    if config.api_key:
        return AuthenticatedClient(token=config.api_key, **common)
    return Client(**common)


def call(endpoint: ModuleType, config: Config, **kwargs: Any) -> Response[Any]:
    """``endpoint.sync_detailed`` of a generated endpoint module (``rft_client.api.<tag>.<operation>``) with the
    configured client; raises ``ApiError`` on any status >= 400 and ``CliError`` when the API is unreachable."""
    try:
        resp = endpoint.sync_detailed(client=config.client(), **kwargs)
    except httpx.TransportError as exc:
        raise CliError(f"cannot reach the RFT API at {config.base_url}: {exc or type(exc).__name__}") from exc
    if int(resp.status_code) >= 400:
        raise ApiError.from_response(resp)
    return resp


def fetch(endpoint: ModuleType, config: Config, model: type[Model], **kwargs: Any) -> Model:
    """``call``, then the typed body the generated client parsed (``model``: the endpoint's 2xx answer)."""
    resp = call(endpoint, config, **kwargs)
    if not isinstance(resp.parsed, model):
        raise CliError(f"unexpected answer from the RFT API ({resp.status_code}): {resp.content[:200]!r}")
    return resp.parsed


def parsed(resp: Response[Any]) -> dict[str, Any]:
    """The parsed body as a plain dict (the generated models' ``to_dict``), for printing and rendering."""
    if resp.parsed is not None and hasattr(resp.parsed, "to_dict"):
        return resp.parsed.to_dict()
    return json.loads(resp.content)


def iter_events(config: Config, job_id: str, page_size: int = 100) -> Iterator[JobEvent]:
    """A job's events newest first, following the ``after`` cursor; stop iterating to stop fetching."""
    after: str | Unset = UNSET
    while True:
        page = fetch(list_events, config, ListResponseJobEvent, fine_tuning_job_id=job_id, limit=page_size, after=after)
        yield from page.data
        if not page.has_more or not page.data:
            return
        after = page.data[-1].id
