"""Project secrets (``/v1/secrets``) on the real app (SQLite via Alembic): write-only, encrypted at rest, scoped to
their project, named by a job's integrations and carried by that job's claim alone; and the worker's side of them
(the claim, the rank files, the W&B tracker) with a stand-in ``wandb`` module that records what it was given.

tests/integration/test_secrets.py runs two projects' jobs on real services and a real W&B client."""

from __future__ import annotations

import json
import secrets
import stat
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from api.core.errors import Unavailable
from api.core.idempotency_store import canonical_json, fingerprint
from api.core.settings import ApiSettings
from api.db.models import IdempotencyKey, Job, ProjectSecret
from api.jobs.claims import claim_response
from api.secrets import crypto
from api.secrets import service as svc
from grpo_core.errors import UserError
from runtime import internal as api
from tests.helpers import ARITH_ROWS, DIGIT_GRADER, claim, job_body, jsonl, rank_spec
from tests.tiny_model import TINY_ID
from tests.unit.test_tenants import bearer, new_key
from worker.launch import RankSpec
from worker.settings import WorkerSettings
from worker.tracking import Tracker, check_secrets

JOBS = "/v1/fine_tuning/jobs"
WORKER = {"Authorization": "Bearer t0k"}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False}


def value() -> str:
    """A W&B-shaped key (40+ word characters), different every time."""
    return "wb" + secrets.token_hex(24)


def put(client: TestClient, name: str, val: str, headers: dict[str, str] | None = None) -> Any:
    return client.post("/v1/secrets", json={"name": name, "value": val}, headers=headers)


def upload(client: TestClient, headers: dict[str, str] | None = None) -> str:
    r = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def wandb_job(file_id: str, secret: str | None) -> dict[str, Any]:
    integration: dict[str, Any] = {"type": "wandb"}
    if secret is not None:
        integration["api_key_secret"] = secret
    return job_body(TINY_ID, file_id, grader=DIGIT_GRADER) | {"integrations": [integration]}


def stored(settings: ApiSettings, name: str) -> ProjectSecret:
    with Session(create_engine(settings.db_url)) as s:
        (row,) = s.scalars(select(ProjectSecret).where(ProjectSecret.name == name))
        s.expunge(row)
        return row


def test_written_listed_rotated_and_deleted_without_ever_showing_the_value(
    client: TestClient, settings: ApiSettings
) -> None:
    first, second = value(), value()
    r = put(client, "my-wandb", first)
    assert r.status_code == 201, r.text
    made = r.json()
    assert set(made) == {"object", "name", "hint", "created_at", "updated_at"}
    assert made["object"] == "secret" and made["name"] == "my-wandb" and made["hint"] == "…" + first[-4:]
    listed = client.get("/v1/secrets")
    one = client.get("/v1/secrets/my-wandb")
    assert listed.json()["data"] == [made] and one.json() == made
    rotated = put(client, "my-wandb", second)
    assert rotated.status_code == 201
    assert rotated.json()["hint"] == "…" + second[-4:] and rotated.json()["created_at"] == made["created_at"]
    assert rotated.json()["updated_at"] >= made["updated_at"]
    assert [s["name"] for s in client.get("/v1/secrets").json()["data"]] == ["my-wandb"]  # rotated, not added
    # at rest: a Fernet token, not the value, that the service's key opens to the newest value
    row = stored(settings, "my-wandb")
    assert second not in row.ciphertext and first not in row.ciphertext
    assert crypto.cipher(settings).decrypt(row.ciphertext.encode()).decode() == second
    key_file = settings.state_dir / crypto.KEY_FILE  # the embedded defaults' key, generated once
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    gone = client.delete("/v1/secrets/my-wandb")
    assert gone.json() == {"object": "secret.deleted", "name": "my-wandb", "deleted": True}
    missing = client.get("/v1/secrets/my-wandb")
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "secret_name"
    assert client.delete("/v1/secrets/my-wandb").status_code == 404
    for resp in (r, listed, one, rotated, gone, missing):
        assert first not in resp.text and second not in resp.text
    assert put(client, "short", "abc").json()["hint"] == "3 characters"  # a short value shows none of itself


def test_an_idempotent_replay_and_the_stored_fingerprint_never_hold_the_value(
    client: TestClient, settings: ApiSettings
) -> None:
    val = value()
    key = {"Idempotency-Key": "write-1"}
    first = put(client, "w", val, key)
    again = put(client, "w", val, key)
    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true" and again.json() == first.json()
    other = put(client, "w", value(), key)  # the same key with another value: Stripe's 422
    assert other.status_code == 422, other.text
    for resp in (first, again, other):
        assert val not in resp.text
    plain_hash = fingerprint("POST /v1/secrets", [canonical_json(json.dumps({"name": "w", "value": val}).encode())])
    with Session(create_engine(settings.db_url)) as s:
        (row,) = s.scalars(select(IdempotencyKey))
        assert val not in json.dumps(row.response) and row.request_hash != plain_hash  # keyed: no guess checks it


def test_names_and_values_are_checked_and_an_error_never_echoes_the_value(client: TestClient) -> None:
    for name in ("", "a b", "x" * 65, "../etc", "ü"):
        r = put(client, name, value())
        assert r.status_code == 422 and r.json()["error"]["param"] == "name", (name, r.text)
    long = "v" * 5000
    for bad in ("", long):
        r = put(client, "ok", bad)
        assert r.status_code == 422 and r.json()["error"]["param"] == "value", r.text
        assert long not in r.text
    r = client.post("/v1/secrets", json={"name": "ok", "value": "v" * 20, "extra": 1})
    assert r.status_code == 422 and r.json()["error"]["param"] == "extra"
    assert client.get("/v1/secrets").json()["data"] == []


def test_a_job_names_only_a_secret_its_project_has(client: TestClient) -> None:
    file_id = upload(client)
    r = client.post(JOBS, json=wandb_job(file_id, "nope"))
    assert r.status_code == 422 and r.json()["error"]["param"] == "integrations[0].api_key_secret", r.text
    assert "'nope'" in r.json()["error"]["message"]
    bad = client.post(JOBS, json=wandb_job(file_id, "no spaces allowed"))
    assert bad.status_code == 422 and bad.json()["error"]["param"].startswith("integrations.0.api_key_secret")
    put(client, "nope", value())
    made = client.post(JOBS, json=wandb_job(file_id, "nope"))
    assert made.status_code == 201, made.text
    # the secret may be all a project names: the run goes to the default W&B project
    wandb = {"project": api.DEFAULT_WANDB_PROJECT, "name": None, "entity": None, "tags": None}
    assert made.json()["integrations"] == [{"type": "wandb", "wandb": wandb, "api_key_secret": "nope"}]
    plain = client.post(
        JOBS, json=job_body(TINY_ID, file_id, grader=DIGIT_GRADER) | {"integrations": [{"type": "wandb"}]}
    )
    assert plain.json()["integrations"] == [{"type": "wandb", "wandb": wandb}]  # OpenAI's shape: no extra key


def test_another_projects_secret_is_404_absent_and_unnamable(client: TestClient, settings: ApiSettings) -> None:
    _, _, key_a = new_key(settings, name="A")
    _, _, key_b = new_key(settings, name="B")
    a, b = bearer(key_a), bearer(key_b)
    val = value()
    assert put(client, "wandb", val, a).status_code == 201
    theirs = client.get("/v1/secrets/wandb", headers=b)
    never = client.get("/v1/secrets/never", headers=b)
    assert theirs.status_code == 404 and theirs.text == never.text.replace("never", "wandb")
    assert client.delete("/v1/secrets/wandb", headers=b).status_code == 404
    assert client.get("/v1/secrets", headers=b).json()["data"] == []
    r = client.post(JOBS, json=wandb_job(upload(client, b), "wandb"), headers=b)
    assert r.status_code == 422 and r.json()["error"]["param"] == "integrations[0].api_key_secret"
    mine = value()
    assert put(client, "wandb", mine, b).json()["hint"] == "…" + mine[-4:]  # B's own "wandb", beside A's
    assert client.get("/v1/secrets/wandb", headers=a).json()["hint"] == "…" + val[-4:]


def test_the_claim_carries_the_value_for_the_job_that_names_it_only(client: TestClient, settings: ApiSettings) -> None:
    val = value()
    put(client, "wandb", val)
    file_id = upload(client)
    named = client.post(JOBS, json=wandb_job(file_id, "wandb")).json()
    other = client.post(JOBS, json=wandb_job(file_id, None)).json()
    claims = {}
    for job in (named, other):
        r = client.post(
            f"/internal/jobs/{job['id']}/claim", json={"worker_id": "w", "claim_id": "claim-0001"}, headers=WORKER
        )
        assert r.status_code == 200, r.text
        claims[job["id"]] = r.json()
    assert claims[named["id"]]["secrets"] == {"wandb": val}
    assert claims[other["id"]]["secrets"] == {} and val not in json.dumps(claims[other["id"]])
    parsed = api.ClaimResponse.model_validate(claims[named["id"]])  # what the worker holds: masked but in logs
    assert parsed.secrets["wandb"].get_secret_value() == val
    assert val not in repr(parsed) and val not in str(parsed.model_dump())
    with Session(create_engine(settings.db_url)) as s:
        row = s.get(Job, named["id"])
        assert row is not None
        assert claim_response(s, settings, row, with_secrets=False).secrets == {}  # a joining node: none
    for job in (named, other):  # the job, its events: never the value
        for path in ("", "/events"):
            assert val not in client.get(f"{JOBS}/{job['id']}{path}").text


def test_a_secret_the_key_cannot_open_fails_the_job_by_name(
    client: TestClient, settings: ApiSettings, caplog: pytest.LogCaptureFixture
) -> None:
    val = value()
    put(client, "wandb", val)
    job = client.post(JOBS, json=wandb_job(upload(client), "wandb")).json()
    other_key = settings.model_copy(update={"secrets_key": SecretStr(Fernet.generate_key().decode())})
    with Session(create_engine(settings.db_url)) as s:
        row = s.get(Job, job["id"])
        assert row is not None
        spec = claim_response(s, other_key, row)
    assert spec.secrets == {}
    assert "'wandb'" in caplog.text and "cannot be decrypted" in caplog.text and val not in caplog.text
    with pytest.raises(UserError, match=r"integrations\[0\]\.api_key_secret: the project secret 'wandb' is not"):
        check_secrets(spec)


def test_a_new_key_first_decrypts_the_old_secrets_and_reencrypts_them(settings: ApiSettings) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    before = settings.model_copy(update={"secrets_key": SecretStr(old)})
    both = settings.model_copy(update={"secrets_key": SecretStr(f"{new}, {old}")})
    only_new = settings.model_copy(update={"secrets_key": SecretStr(new)})
    val = value()
    with Session(create_engine(settings.db_url)) as s:
        svc.put_secret(s, before, "proj-x", "k", val)
        token = svc.get_secret(s, "proj-x", "k").ciphertext
        assert crypto.decrypt(both, token) == val
        with pytest.raises(crypto.Undecryptable):
            crypto.decrypt(only_new, token)
        assert svc.reencrypt_all(s, both) == (1, [])
        assert crypto.decrypt(only_new, svc.get_secret(s, "proj-x", "k").ciphertext) == val


def test_beyond_one_machine_secrets_need_secrets_key(tmp_path: Path) -> None:
    shared = ApiSettings(state_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(Unavailable, match="SECRETS_KEY"):
        crypto.cipher(shared)
    bad = "not-a-fernet-key"
    with pytest.raises(Unavailable, match="key 2 of SECRETS_KEY") as exc:
        crypto.cipher(shared.model_copy(update={"secrets_key": SecretStr(f"{Fernet.generate_key().decode()},{bad}")}))
    assert bad not in str(exc.value)
    assert not (tmp_path / crypto.KEY_FILE).exists()  # no key generated where several hosts would disagree


# ---------------------------------------------------------------- the worker's side


def test_the_rank_files_keep_the_secret_out_of_the_spec_every_rank_reads(tmp_path: Path) -> None:
    val = value()
    job = claim(secrets={"wandb": val}, integrations=[{"type": "wandb", "api_key_secret": "wandb"}])
    spec = rank_spec(job, tmp_path)
    spec.write()
    text = (tmp_path / "spec.json").read_text()
    assert val not in text and "**" not in text
    assert stat.S_IMODE(spec.secrets_file.stat().st_mode) == 0o600
    every_rank = RankSpec.model_validate_json(text)
    assert every_rank.claim.secrets == {}
    rank0 = every_rank.with_secrets()
    assert rank0.claim.secrets["wandb"].get_secret_value() == val
    assert not spec.secrets_file.exists()  # read once, then gone
    rank_spec(claim(), tmp_path).write()
    assert not spec.secrets_file.exists()


class FakeWandb(types.ModuleType):
    """Records what the tracker gives W&B: init's arguments (its Settings' api_key among them) and teardowns."""

    def __init__(self, fail_with: str | None = None) -> None:
        super().__init__("wandb")
        self.inits: list[dict[str, Any]] = []
        self.teardowns = 0
        self.fail_with = fail_with

    def Settings(self, **kw: Any) -> dict[str, Any]:  # wandb.Settings
        return kw

    def init(self, **kw: Any) -> Any:
        self.inits.append(kw)
        if self.fail_with is not None:
            raise PermissionError(self.fail_with)
        run = types.SimpleNamespace(id=kw["id"], summary={}, finish=lambda exit_code: None)
        run.summary = types.SimpleNamespace(update=lambda _: None)
        return run

    def teardown(self) -> None:
        self.teardowns += 1


def run_tracker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, job: api.ClaimResponse, fake: FakeWandb) -> list[str]:
    monkeypatch.setitem(sys.modules, "wandb", fake)
    said: list[str] = []
    tracker = Tracker(job, WorkerSettings(state_dir=tmp_path), lambda m, level: said.append(m))
    tracker.start()
    tracker.finish(api.FinishStatus.succeeded)
    return said


def test_the_tracker_logs_with_the_projects_key_for_its_run_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    val = value()
    keyed = claim(secrets={"wandb": val}, integrations=[{"type": "wandb", "api_key_secret": "wandb"}])
    fake = FakeWandb()
    said = run_tracker(monkeypatch, tmp_path, keyed, fake)
    (init,) = fake.inits
    assert init["settings"]["api_key"] == val and init["mode"] == "online"
    assert fake.teardowns == 2  # before the run (whatever an earlier job left) and after it (its key)
    assert said == ["Logging to Weights & Biases: run ftjob-x-e1, project rft with this project's key"]
    plain = FakeWandb()
    run_tracker(monkeypatch, tmp_path, claim(integrations=[{"type": "wandb"}]), plain)
    assert "api_key" not in plain.inits[0]["settings"] and plain.inits[0]["mode"] == "offline"
    failing = FakeWandb(fail_with=f"key {val} refused")  # an error that quotes the key is scrubbed of it
    said = run_tracker(monkeypatch, tmp_path, keyed, failing)
    assert said == ["W&B tracking stopped: PermissionError: key [secret] refused"]
    assert failing.teardowns == 2  # a failed init may have logged in: forgotten all the same


def test_a_named_secret_missing_from_the_claim_fails_the_job() -> None:
    check_secrets(claim(integrations=[{"type": "wandb"}]))  # none named: the worker's own key
    check_secrets(claim(secrets={"w": "x" * 40}, integrations=[{"type": "wandb", "api_key_secret": "w"}]))
    with pytest.raises(UserError, match="'w' is not available"):
        check_secrets(claim(integrations=[{"type": "wandb", "api_key_secret": "w"}]))


# ---------------------------------------------------------------- rft secrets


def test_rft_secrets_set_list_delete_never_print_the_value(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from rft_client import Client
    from typer.testing import CliRunner

    from rft_cli import api as cli_api
    from rft_cli.main import app

    monkeypatch.setattr(
        cli_api, "make_client", lambda config: Client(base_url=str(client.base_url)).set_httpx_client(client)
    )
    monkeypatch.setattr(cli_api.Config, "close", lambda self: None)
    runner = CliRunner()
    val, rotated = value(), value()

    def rft(*args: str, stdin: str | None = None) -> Any:
        env = {"RFT_BASE_URL": "http://testserver", "RFT_API_KEY": "", "MY_WANDB_KEY": rotated}
        result = runner.invoke(app, list(args), input=stdin, env=env)
        assert val not in result.output + result.stderr and rotated not in result.output + result.stderr
        return result

    piped = rft("secrets", "set", "wandb", stdin=val + "\n")
    assert piped.exit_code == 0, piped.output + piped.stderr
    assert f"wrote secret wandb (…{val[-4:]})" in piped.output
    assert crypto.hint(val) == client.get("/v1/secrets/wandb").json()["hint"]  # the newline was not stored
    from_env = rft("secrets", "set", "wandb", "--from-env", "MY_WANDB_KEY", "--json")
    assert from_env.exit_code == 0 and json.loads(from_env.output)["hint"] == "…" + rotated[-4:]
    listed = rft("secrets", "list")
    assert "wandb" in listed.output and "…" + rotated[-4:] in listed.output
    bad = rft("secrets", "set", "no spaces", stdin=val)
    assert bad.exit_code == 1 and "[param: name]" in bad.stderr
    assert rft("secrets", "delete", "wandb").exit_code == 0
    gone = rft("secrets", "delete", "wandb")
    assert gone.exit_code == 1 and "404" in gone.stderr
