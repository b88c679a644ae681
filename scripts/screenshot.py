"""A screenshot of a job's dashboard page, taken in headless Debian chromium through Playwright.

``make demo`` calls it with ``--screenshot`` (docs/dashboard-job.png is made that way); also usable alone:
``python -m scripts.screenshot http://127.0.0.1:8765 ftjob-… out.png [--api-key KEY]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path


def chromium_path() -> str | None:
    """Debian's chromium (``make browser``), or the binary RFT_CHROMIUM names; None when there is none."""
    return os.environ.get("RFT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def capture_job_page(base_url: str, job_id: str, out: Path, api_key: str | None = None, height: int = 1300) -> Path:
    """Open the job page (signing in when the service wants a key), wait until every step's point is drawn and
    the rollouts are in, and save the top ``height`` pixels (header, warnings, curves, first rollouts)."""
    from playwright.sync_api import sync_playwright

    chromium = chromium_path()
    if not chromium:
        raise RuntimeError("chromium is not installed (make browser, or set RFT_CHROMIUM)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": height})
            page.set_default_timeout(30_000)
            page.goto(f"{base_url}/#/jobs/{job_id}")
            if api_key:
                page.get_by_test_id("login").wait_for()
                page.fill('input[name="api_key"]', api_key)
                page.click('button[type="submit"]')
            page.get_by_test_id("job-page").wait_for()
            page.get_by_test_id("stream-state").filter(has_text="ended").wait_for()
            page.get_by_test_id("rollout-group").first.wait_for()
            page.wait_for_timeout(500)  # let the last animation frame paint the charts
            page.screenshot(path=str(out))
        finally:
            browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base_url")
    ap.add_argument("job_id")
    ap.add_argument("out", type=Path)
    ap.add_argument("--api-key")
    args = ap.parse_args()
    print(capture_job_page(args.base_url, args.job_id, args.out, args.api_key))


if __name__ == "__main__":
    main()
