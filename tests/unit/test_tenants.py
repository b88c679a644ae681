"""Projects and API keys: bearer keys per project, hash-only storage, revocation, open mode, the legacy
``API_KEY``, presigned downloads, and the admin CLI end to end. Isolation between projects:
tests/unit/test_tenant_isolation.py.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect, select, text, update
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.db.models import DEFAULT_PROJECT, ApiKey, now
from api.tenants import service as tenants
from tests.helpers import ARITH_ROWS, ROOT, jsonl

JOBS = "/v1/fine_tuning/jobs"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def new_key(settings: ApiSettings, project: str | None = None, name: str = "p") -> tuple[str, str, str]:
    """(project id, key id, key) — a new project unless ``project`` is given."""
    with Session(create_engine(settings.db_url)) as s:
        pid = project or tenants.create_project(s, name).id
        row, key = tenants.create_key(s, pid, "test")
        return pid, row.id, key


def upload(client: TestClient, headers: dict[str, str] | None = None) -> str:
    r = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def assert_401(r: Any, code: str) -> None:
    assert r.status_code == 401, r.text
    err = r.json()["error"]
    assert set(r.json()) == {"error"} and set(err) == {"type", "code", "message", "param"}
    assert (err["type"], err["code"], err["param"]) == ("authentication_error", code, None) and err["message"]
    assert r.headers["www-authenticate"] == "Bearer"


def test_open_mode_lasts_until_the_first_key_then_every_request_needs_one(
    client: TestClient, settings: ApiSettings
) -> None:
    assert client.get(JOBS).status_code == 200  # no key, no API_KEY: open, everything is the default project's
    assert client.get(JOBS, headers=bearer("sk-whatever-the-sdk-sends")).status_code == 200  # ignored while open
    file_id = upload(client)

    _, _, key = new_key(settings, DEFAULT_PROJECT)
    assert_401(client.get(JOBS), "missing_api_key")
    assert_401(client.get(JOBS, headers=bearer("sk-whatever-the-sdk-sends")), "invalid_api_key")
    assert_401(client.get(JOBS, headers={"Authorization": f"Basic {key}"}), "missing_api_key")
    assert_401(client.get(JOBS, headers=bearer(key + "x")), "invalid_api_key")
    assert client.get(f"/v1/files/{file_id}", headers=bearer(key)).status_code == 200  # open mode's data kept
    assert client.get("/healthz").status_code == 200  # probes need no key


def test_keys_are_stored_only_as_sha256_and_a_revoked_key_is_refused_at_once(
    client: TestClient, settings: ApiSettings
) -> None:
    pid, key_id, key = new_key(settings)
    assert key.startswith("rft_") and len(key) == 4 + 43  # 32 random bytes, URL-safe base64
    r = client.get(JOBS, headers=bearer(key))
    assert r.status_code == 200 and r.json()["data"] == []
    file_id = upload(client, bearer(key))

    engine = create_engine(settings.db_url)
    with Session(engine) as s:
        row = s.get(ApiKey, key_id)
        assert row is not None and row.project_id == pid
        assert row.key_hash == hashlib.sha256(key.encode()).hexdigest() and row.hint == f"rft_…{key[-4:]}"
        assert row.last_used_at is not None and row.revoked_at is None
        # the key itself is nowhere in the database: every column of every row of every table
        for table in inspect(engine).get_table_names():
            for values in s.execute(text(f'select * from "{table}"')):
                assert not any(key in str(v) or key[4:] in str(v) for v in values), table

        # last_used_at is rewritten at most once a minute: no write per request
        s.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now() - 30))
        s.commit()
        client.get(JOBS, headers=bearer(key))
        s.expire_all()
        recent = s.scalar(select(ApiKey.last_used_at).where(ApiKey.id == key_id))
        assert recent is not None and now() - recent >= 29  # used 30 s ago: not rewritten
        s.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now() - 120))
        s.commit()
        client.get(JOBS, headers=bearer(key))
        s.expire_all()
        after = s.scalar(select(ApiKey.last_used_at).where(ApiKey.id == key_id))
        assert after is not None and now() - after <= 2

        tenants.revoke_key(s, key_id)
        first = s.get(ApiKey, key_id).revoked_at  # type: ignore[union-attr]
        assert tenants.revoke_key(s, key_id).revoked_at == first  # idempotent
    assert_401(client.get(JOBS, headers=bearer(key)), "invalid_api_key")
    assert_401(client.get(f"/v1/files/{file_id}", headers=bearer(key)), "invalid_api_key")
    assert_401(client.get(JOBS), "missing_api_key")  # every key revoked: still closed, never silently open


@pytest.mark.parametrize("settings_overrides", [{"api_key": "legacy-secret", "reaper": False}])
def test_the_legacy_api_key_opens_the_default_project_beside_project_keys(
    client: TestClient, settings: ApiSettings
) -> None:
    assert_401(client.get(JOBS), "missing_api_key")  # API_KEY set: closed even with no key in the table
    legacy = bearer("legacy-secret")
    default_file = upload(client, legacy)
    _, _, key = new_key(settings)
    own_file = upload(client, bearer(key))
    assert client.get(f"/v1/files/{default_file}", headers=legacy).status_code == 200
    assert client.get(f"/v1/files/{default_file}", headers=bearer(key)).status_code == 404
    assert client.get(f"/v1/files/{own_file}", headers=legacy).status_code == 404
    _, _, default_key = new_key(settings, DEFAULT_PROJECT)  # a real key for the legacy key's project
    assert client.get(f"/v1/files/{default_file}", headers=bearer(default_key)).status_code == 200


def test_a_non_ascii_bearer_is_a_401_not_a_500(client: TestClient, settings: ApiSettings) -> None:
    new_key(settings)
    r = client.get(JOBS, headers={"Authorization": "Bearer clé".encode("latin-1")})  # type: ignore[dict-item]
    assert_401(r, "invalid_api_key")
    internal = client.post("/internal/jobs/x/heartbeat", json={"epoch": 1}, headers={"Authorization": b"Bearer \xe9"})  # type: ignore[dict-item]
    assert internal.status_code == 401


class _PresigningStore:
    """The local store's bytes with an S3-like ``presigned_url``: the route must redirect instead of streaming."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, []  # type: ignore[var-annotated]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def presigned_url(self, key: str, seconds: int, **kw: Any) -> str:
        self.calls.append((key, seconds, kw))
        return f"https://bucket.example/{key}?expires={seconds}"


def test_checkpoint_content_is_a_302_to_a_presigned_url_when_the_store_has_urls(
    client: TestClient, settings: ApiSettings
) -> None:
    from tests.unit.test_tenant_isolation import make_project_objects

    objs = make_project_objects(client, settings, {})
    url = f"{JOBS}/{objs['fine_tuning_job_id']}/checkpoints/{objs['checkpoint_id']}/content"
    r = client.get(url)
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-tar"  # local store: streamed
    store = client.app.state.store  # type: ignore[attr-defined]
    client.app.state.store = _PresigningStore(store)  # type: ignore[attr-defined]
    r = client.get(url, follow_redirects=False)
    assert r.status_code == 302 and r.headers["cache-control"] == "no-store"
    key = objs["checkpoint_key"]
    assert r.headers["location"] == f"https://bucket.example/{key}?expires=300"
    assert key.startswith(f"projects/{DEFAULT_PROJECT}/jobs/{objs['fine_tuning_job_id']}/checkpoints/")
    assert client.app.state.store.calls == [  # type: ignore[attr-defined]
        (key, 300, {"filename": f"{objs['checkpoint_id']}.tar", "content_type": "application/x-tar"})
    ]


def test_s3_presigned_urls_expire_in_five_minutes_and_use_the_public_endpoint(settings: ApiSettings) -> None:
    from runtime.storage import LocalStore

    assert LocalStore(settings.objects_dir).presigned_url("k", 300) is None
    s3 = ApiSettings(
        s3_endpoint_url="http://minio:9000",
        s3_public_endpoint_url="https://files.example.com",
        s3_bucket="b",
        aws_access_key_id="id",
        aws_secret_access_key="secret",
    )
    url = s3.store().presigned_url("projects/p/jobs/j/checkpoints/a.tar", 300, filename="c.tar",
                                    content_type="application/x-tar")  # fmt: skip
    assert url is not None
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert f"{parts.scheme}://{parts.netloc}" == "https://files.example.com"  # signed for the host clients use
    assert parts.path.endswith("/projects/p/jobs/j/checkpoints/a.tar")
    assert query["X-Amz-Expires"] == ["300"] and query["response-content-type"] == ["application/x-tar"]
    assert query["response-content-disposition"] == ['attachment; filename="c.tar"']


def admin(settings: ApiSettings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("API_KEY", "S3_ENDPOINT_URL", "S3_BUCKET")}
    env["DATABASE_URL"] = settings.db_url
    return subprocess.run(
        [sys.executable, "-m", "api.admin", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
def test_admin_cli_creates_projects_and_keys_that_the_api_accepts_until_revoked(
    client: TestClient, settings: ApiSettings
) -> None:
    made = admin(settings, "projects", "create", "Acme Research")
    assert made.returncode == 0, made.stderr
    pid = made.stdout.strip()
    assert pid.startswith("proj-") and "\n" not in pid
    listed = admin(settings, "projects", "list").stdout.splitlines()
    assert listed[0].split("\t") == ["id", "name", "created", "weight", "max_priority", "max_running_jobs"]
    assert {tuple(line.split("\t")[:2]) for line in listed[1:]} == {
        (DEFAULT_PROJECT, "default"),
        (pid, "Acme Research"),
    }
    shared = admin(
        settings, "projects", "set", pid, "--weight", "2.5", "--max-priority", "10", "--max-running-jobs", "3"
    )
    assert shared.returncode == 0, shared.stderr
    assert "weight 2.5, max priority 10, max running jobs 3" in shared.stderr
    row = next(line for line in admin(settings, "projects", "list").stdout.splitlines() if line.startswith(pid))
    assert row.split("\t")[3:] == ["2.5", "10", "3"]
    assert admin(settings, "projects", "set", pid, "--weight", "0").returncode == 1

    created = admin(settings, "keys", "create", "--project", pid, "--name", "ci")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("rft_") and "shown only this once" in created.stderr
    keys = admin(settings, "keys", "list", "--project", pid).stdout
    assert key not in keys and key[4:] not in keys and f"rft_…{key[-4:]}" in keys
    key_id, project, name, hint, *_ = keys.splitlines()[1].split("\t")
    assert (project, name, hint) == (pid, "ci", f"rft_…{key[-4:]}") and key_id.startswith("key-")
    assert admin(settings, "keys", "list", "--project", DEFAULT_PROJECT).stdout.count("\n") == 1  # header only

    assert client.get(JOBS, headers=bearer(key)).status_code == 200
    assert_401(client.get(JOBS), "missing_api_key")  # the first key closed the service
    used = admin(settings, "keys", "list").stdout.splitlines()[1].split("\t")
    assert used[5] != "-" and used[6] == "-"  # last_used set, not revoked

    revoked = admin(settings, "keys", "revoke", key_id)
    assert revoked.returncode == 0 and key_id in revoked.stderr
    assert_401(client.get(JOBS, headers=bearer(key)), "invalid_api_key")
    assert admin(settings, "keys", "list").stdout.splitlines()[1].split("\t")[6] != "-"

    for args, why in [
        (("keys", "create", "--project", "proj-nope"), "no project 'proj-nope'"),
        (("keys", "revoke", "key-nope"), "no API key 'key-nope'"),
        (("projects", "create", "  "), "1 to 256 characters"),
    ]:
        bad = admin(settings, *args)
        assert bad.returncode == 1 and why in bad.stderr and bad.stdout == "", (args, bad)
