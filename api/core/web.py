"""The dashboard: a static single-page app (api/dashboard, bundled by esbuild at install time) served at ``/``.

The bundle lives in api/dashboard/dist (``make dashboard``; the API image builds it in a Node stage). The page
talks only to the public API with the user's key, so it needs nothing from the server beyond these files. When
the bundle is missing the API still serves everything else and ``/`` says how to build it.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

DIST = Path(__file__).resolve().parents[1] / "dashboard" / "dist"  # api/dashboard/dist

# the bundle's names carry no content hash: the browser revalidates (ETag) on every load instead
_NO_CACHE = {"Cache-Control": "no-cache"}
_SECURITY = {
    # everything the page loads is ours; the API key sits in sessionStorage, so no third-party script may run
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class _Assets(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(_NO_CACHE | _SECURITY)  # index.html is reachable here too
        return response


def install(app: FastAPI, dist: Path = DIST) -> None:
    """``/`` (the page) and ``/dashboard/*`` (its script, styles); a clear 503 at ``/`` if it was not built."""
    index = dist / "index.html"

    @app.get("/", include_in_schema=False, response_model=None)
    def dashboard() -> Response:
        if not index.is_file():
            return HTMLResponse(
                "<!doctype html><title>RFT</title><h1>Dashboard not built</h1><p>Run <code>make dashboard</code> "
                "(Node.js and npm needed) and reload. The API itself is up: see <a href='/docs'>/docs</a>.</p>",
                status_code=503,
            )
        return FileResponse(index, headers=_NO_CACHE | _SECURITY)

    app.mount("/dashboard", _Assets(directory=dist, check_dir=False), name="dashboard")
