"""Download links (signed, expiring, key-free) for the local object store, and the dashboard's route at ``/``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.checkpoints.downloads import sign, verify
from api.core import web
from api.core.errors import NotFound
from api.core.settings import ApiSettings
from tests.unit.test_api_ops import make_job


def test_a_link_downloads_the_checkpoint_without_a_key(client: TestClient, settings: ApiSettings) -> None:
    job_id = make_job(client)
    ckpt = client.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"][0]
    settings.objects_dir.mkdir(parents=True, exist_ok=True)
    (settings.objects_dir / "k").write_bytes(b"adapter tar bytes")  # the object key the fake worker registered
    before = int(time.time())
    link = client.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints/{ckpt['id']}/download_link").json()
    assert link["object"] == "download_link" and before + 290 <= link["expires_at"] <= int(time.time()) + 300
    assert link["url"].startswith("http://testserver/v1/downloads/")
    r = client.get(link["url"], headers={"Authorization": ""})
    assert r.status_code == 200 and r.content == b"adapter tar bytes"
    assert r.headers["content-disposition"] == f'attachment; filename="{ckpt["id"]}.tar"'
    assert r.headers["content-type"] == "application/x-tar"


def test_a_link_is_refused_when_forged_damaged_or_expired(client: TestClient, settings: ApiSettings) -> None:
    token = sign(settings, "projects/p/secret.tar", "x.tar", int(time.time()) + 60)
    assert verify(settings, token) == ("projects/p/secret.tar", "x.tar")
    body, mac = token.split(".")
    other = ApiSettings(state_dir=settings.state_dir, worker_token="another-token")
    forged = [
        sign(other, "projects/p/secret.tar", "x.tar", int(time.time()) + 60),  # signed under another key
        f"{body}A.{mac}",  # the claims changed
        f"{body}.{mac[:-2]}",  # the signature cut
        "garbage",
        "",
    ]
    for bad in forged:
        with pytest.raises(NotFound):
            verify(settings, bad)
    with pytest.raises(NotFound, match="expired"):
        verify(settings, token, now=time.time() + 61)
    r = client.get(f"/v1/downloads/{forged[0]}")
    assert r.status_code == 404 and r.json()["error"]["param"] == "token"


def test_dashboard_page_and_assets(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    app = FastAPI()
    web.install(app, dist)
    with TestClient(app) as c:
        missing = c.get("/")
        assert missing.status_code == 503 and "make dashboard" in missing.text
        dist.mkdir()
        (dist / "index.html").write_text("<!doctype html><div id=app></div>")
        (dist / "app.js").write_text("console.log(1)")
        page = c.get("/")
        assert page.status_code == 200 and "id=app" in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "connect-src 'self'" in csp  # no third-party script or host
        asset = c.get("/dashboard/app.js")
        assert asset.status_code == 200 and asset.headers["cache-control"] == "no-cache"
        assert c.get("/dashboard/nope.js").status_code == 404


def test_the_built_dashboard_is_served_by_the_app(client: TestClient) -> None:
    """`make install` builds the bundle: the real app serves it, and the page loads only our own files."""
    page = client.get("/")
    assert page.status_code == 200, "api/dashboard/dist is missing: run `make dashboard`"
    assert "/dashboard/app.js" in page.text and "http" not in page.text.split("<body>")[1]
    js = client.get("/dashboard/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    # one self-contained bundle: no import of another module, no URL but XML namespace names
    assert not re.search(r"""(?:^|[;\s}])import\s*\(?["']""", js.text)
    assert {
        u for u in re.findall(r"""https?://[^"'\s)]*""", js.text) if not u.startswith("http://www.w3.org/")
    } == set()
    assert client.get("/dashboard/app.css").status_code == 200


def test_a_link_uses_the_public_url_when_set(settings: ApiSettings) -> None:
    """Behind a TLS proxy the request's URL is the proxy's upstream (http://10.0.0.5:8000): PUBLIC_URL wins."""
    from api.main import create_app

    public = settings.model_copy(update={"public_url": "https://rft.example.com/"})
    with TestClient(create_app(public)) as c:
        job_id = make_job(c)
        ckpt = c.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"][0]
        link = c.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints/{ckpt['id']}/download_link").json()
    assert link["url"].startswith("https://rft.example.com/v1/downloads/")
