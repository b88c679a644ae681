"""openapi.json and clients/python stay equal to the app, and a route changed without regeneration is caught.

The same comparison runs before pytest in ``make test`` (``make check-openapi``); here it is shown to fail on a
modified route, a modified committed spec and a hand-edited client file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rft_client import AuthenticatedClient

from scripts import openapi
from tests.helpers import ARITH_ROWS, jsonl
from tests.tiny_model import TINY_ID

ROOT = Path(__file__).resolve().parents[2]


def test_committed_spec_is_the_apps_spec() -> None:
    committed = openapi.SPEC_PATH.read_text(encoding="utf-8")
    drift = openapi.spec_drift(committed, openapi.build_spec())
    assert not drift, "\n".join(drift) + "\nrun `make openapi`"


def test_spec_is_deterministic_across_processes() -> None:
    """Sorted keys and fixed formatting: another interpreter with another hash seed writes the same bytes."""
    code = "import sys; from scripts.openapi import build_spec, spec_text; sys.stdout.write(spec_text(build_spec()))"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    other = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert other == openapi.spec_text(openapi.build_spec())


def test_a_changed_route_is_drift() -> None:
    from api.main import create_app

    app = create_app()

    @app.get("/v1/extra", tags=["extra"])
    def extra() -> dict[str, str]:
        return {}

    route = next(r for r in app.routes if getattr(r, "name", None) == "list_jobs")
    route.description = "changed without regenerating"  # type: ignore[attr-defined]
    drift = openapi.spec_drift(openapi.SPEC_PATH.read_text(encoding="utf-8"), app.openapi())
    assert "  path added:   /v1/extra" in drift
    assert "  path changed: /v1/fine_tuning/jobs" in drift
    assert any("changed without regenerating" in line for line in drift)


def test_check_fails_when_the_app_changed_and_nothing_was_regenerated(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check script itself, on the committed files, against an app with one more route: exit 1."""
    from api.main import create_app

    app = create_app()
    app.add_api_route("/v1/extra", lambda: {}, methods=["GET"], name="extra_route")
    monkeypatch.setattr(openapi, "build_spec", app.openapi)
    assert openapi.main(["check"]) == 1
    err = capsys.readouterr().err
    assert "path added:   /v1/extra" in err
    assert "rft_client/api/default/extra_route.py: missing" in err
    assert "run `make openapi`" in err


def test_check_passes_on_copies_and_fails_on_edited_copies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, client = tmp_path / "openapi.json", tmp_path / "client"
    shutil.copy(openapi.SPEC_PATH, spec)
    shutil.copytree(openapi.CLIENT_DIR, client, ignore=shutil.ignore_patterns(*openapi.IGNORED))
    args = ["check", "--spec", str(spec), "--client-dir", str(client)]
    assert openapi.main(args) == 0, capsys.readouterr().err

    spec.write_text(spec.read_text().replace('"/v1/models"', '"/v1/base_models"'))
    (client / "rft_client" / "client.py").write_text("# edited by hand\n")
    (client / "rft_client" / "stale.py").write_text("")
    assert openapi.main(args) == 1
    err = capsys.readouterr().err
    assert "path added:   /v1/models" in err and "path removed: /v1/base_models" in err
    assert "rft_client/client.py: changed" in err and "rft_client/stale.py: stale" in err


def test_sync_tree_writes_only_what_changed(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    for root in (src, dst):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "same.py").write_text("x = 1\n")
    (src / "pkg" / "new.py").write_text("y = 2\n")
    (dst / "pkg" / "old.py").write_text("z = 3\n")
    (dst / "pkg.egg-info").mkdir()  # pip install -e leftovers are not generation's business
    before = (dst / "pkg" / "same.py").stat().st_mtime_ns
    assert openapi.sync_tree(src, dst) == ["pkg/new.py", "pkg/old.py"]
    assert sorted(p.name for p in (dst / "pkg").iterdir()) == ["new.py", "same.py"]
    assert (dst / "pkg" / "same.py").stat().st_mtime_ns == before and (dst / "pkg.egg-info").is_dir()


def test_the_client_readme_example_runs_against_the_api(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generated client's README (our template, clients/templates) shows real modules and models: its example
    runs as written against the app, with only the base URL and the model id swapped for the test's."""
    readme = (ROOT / "clients" / "python" / "README.md").read_text()
    assert "MyDataModel" not in readme and "api.example.com" not in readme  # not the generator's template
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    line = 'client = AuthenticatedClient(base_url="http://127.0.0.1:8000", token="rft_…")'
    assert line in code
    code = code.replace(line, 'client = AuthenticatedClient(base_url="http://testserver", token="x")')
    code = code.replace('"SmolLM2-135M-Instruct"', repr(TINY_ID)).replace("print(", "printed.append((")
    code = code.replace(".full_iteration)", ".full_iteration))")
    (tmp_path / "train.jsonl").write_bytes(jsonl(ARITH_ROWS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(AuthenticatedClient, "get_httpx_client", lambda self: client)
    scope: dict[str, Any] = {"printed": []}
    exec(compile(code, "clients/python/README.md", "exec"), scope)
    assert scope["job"].status == "queued" and scope["job"].model == TINY_ID
    assert client.get(f"/v1/fine_tuning/jobs/{scope['job'].id}").json()["training_file"] == scope["training_file"].id
