"""A real stack for the dashboard's browser tests: Postgres, Redis, a moto S3 server, the API with a project key
(so the login page is in force) and, started by the test when it wants steps to land, a Celery worker; and
Debian's chromium driven by Playwright (``executable_path``: no browser download).

Screenshots go to ``$RFT_ARTIFACTS_DIR`` (default ``.state/artifacts/browser``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page

from scripts.local_stack import ROOT
from scripts.screenshot import chromium_path
from tests.integration.stack import Stack, production_env, running_api
from tests.services import fresh_database, leased_redis_db

pytestmark = pytest.mark.integration


def chromium() -> str:
    path = chromium_path()
    if not path:
        pytest.fail("chromium is not installed: `make browser` (apt-get install chromium) or set RFT_CHROMIUM")
    return path


@pytest.fixture(scope="session")
def artifacts() -> Path:
    out = Path(os.environ.get("RFT_ARTIFACTS_DIR", ROOT / ".state" / "artifacts" / "browser"))
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def stack(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """A database and a broker queue of its own: the key made below must not close the integration tests'
    open-mode stack, and its worker must not take their jobs."""
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, tmp_path_factory.mktemp("state"))
        with running_api(env, logs_dir) as stack:
            yield stack


@pytest.fixture(scope="module")
def api_key(stack: Stack) -> str:
    """A project and a key for it, made with the operator's CLI: from now on the API wants a key."""

    def admin(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "api.admin", *args], env=stack.env, cwd=ROOT, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    project = admin("projects", "create", "browser-tests")
    return admin("keys", "create", "--project", project, "--name", "dashboard")


@pytest.fixture(scope="module")
def client(stack: Stack, api_key: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=stack.url, headers=headers, timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def page_errors() -> list[str]:
    """Uncaught exceptions and console errors of the page (every test asserts there were none)."""
    return []


@pytest.fixture(scope="module")
def page(browser: Browser, page_errors: list[str]) -> Iterator[Page]:
    """One signed-out tab for the module's tests (they follow one user's session, in order)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    # console errors too (a CSP refusal is only reported there), but not the 401 of the wrong-key sign-in
    page.on(
        "console",
        lambda m: (
            page_errors.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield page
    context.close()
