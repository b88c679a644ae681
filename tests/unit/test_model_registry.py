"""The model registry through the API on the embedded defaults (SQLite, local-folder store): the admin routes and
CLI, ``/v1/models``' metadata, the claim's model files, removal, and the prompt-length 422 at job creation.
tests/integration/test_model_registry.py runs the same against S3 (moto) and a real worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from api.main import create_app
from tests.helpers import ROOT, job_body, jsonl
from tests.tiny_model import TINY_ID

ADMIN = {"Authorization": "Bearer adm1n"}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"admin_token": "adm1n"}


def upload(client: TestClient, rows: list[dict[str, Any]]) -> str:
    r = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("t.jsonl", jsonl(rows))})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


ROWS = [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(4)]


def register(client: TestClient, source: Path | str, **fields: Any) -> Any:
    return client.post("/v1/admin/models", json={"source": str(source), **fields}, headers=ADMIN)


def test_the_admin_routes_need_the_admin_token_and_are_off_without_one(
    client: TestClient, settings: ApiSettings, tiny_model_dir: Path
) -> None:
    assert register(client, tiny_model_dir).status_code == 201
    wrong = client.post("/v1/admin/models", json={"source": str(tiny_model_dir)}, headers={"Authorization": "x"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_admin_token"
    off = settings.model_copy(update={"admin_token": None})
    with TestClient(create_app(off)) as c:
        r = c.get(f"/v1/admin/models/{TINY_ID}", headers=ADMIN)
    assert r.status_code == 403 and r.json()["error"]["code"] == "admin_disabled"


def test_a_registered_model_is_stored_listed_with_its_metadata_and_claimed_with_its_files(
    client: TestClient, settings: ApiSettings, tiny_model_dir: Path
) -> None:
    r = register(client, tiny_model_dir, id="tiny-reg", hub_id="org/tiny")
    assert r.status_code == 201, r.text
    detail = r.json()
    assert detail["architecture"] == "LlamaForCausalLM" and detail["context_length"] == 256
    assert detail["hub_id"] == "org/tiny" and detail["source"] == str(tiny_model_dir)
    assert detail["object_prefix"].startswith(f"models/tiny-reg/{detail['sha256'][:16]}-")
    stored = settings.objects_dir / detail["object_prefix"]
    assert sorted(p.name for p in stored.iterdir()) == sorted(f["name"] for f in detail["files"])

    models = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
    assert models["tiny-reg"]["parameter_count"] == detail["parameter_count"] > 0
    assert models["tiny-reg"]["dtype"] == "float32" and models["tiny-reg"]["chat_template"] is False
    assert models[TINY_ID]["source"] == "catalog"  # the operator's folder is still offered

    job = client.post("/v1/fine_tuning/jobs", json=job_body("tiny-reg", upload(client, ROWS)))
    assert job.status_code == 201, job.text
    claim = client.post(
        f"/internal/jobs/{job.json()['id']}/claim",
        json={"worker_id": "w", "claim_id": "claim-0001"},
        headers={"Authorization": "Bearer t0k"},
    ).json()
    source = claim["model_source"]
    assert source["digest"] == detail["sha256"] and source["hub_id"] == "org/tiny"
    assert source["object_prefix"] == detail["object_prefix"]
    assert {f["name"] for f in source["files"]} == {f["name"] for f in detail["files"]}

    # a model in use is not removed; once its job is over it is, files and all
    busy = client.delete("/v1/admin/models/tiny-reg", headers=ADMIN)
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "model_in_use"
    client.post(f"/v1/fine_tuning/jobs/{job.json()['id']}/cancel")
    client.post(
        f"/internal/jobs/{job.json()['id']}/finish",
        json={"epoch": claim["epoch"], "status": "cancelled"},
        headers={"Authorization": "Bearer t0k"},
    )
    assert client.delete("/v1/admin/models/tiny-reg", headers=ADMIN).status_code == 200
    assert not any(stored.iterdir())
    assert client.get("/v1/admin/models/tiny-reg", headers=ADMIN).status_code == 404


def test_a_folder_that_is_no_causal_lm_is_refused_naming_what_is_missing_and_nothing_is_stored(
    client: TestClient, settings: ApiSettings, tiny_model_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    r = register(client, broken)
    assert r.status_code == 400 and r.json()["error"]["code"] == "not_a_causal_lm"
    message = r.json()["error"]["message"]
    assert "architectures=['BertModel']" in message and "tokenizer.json" in message and "weights" in message
    assert register(client, tmp_path / "nowhere").status_code == 400
    assert register(client, tiny_model_dir, id="bad id!").json()["error"]["param"] == "id"
    assert register(client, "hf://org/not-cached").json()["error"]["code"] == "model_not_in_cache"
    assert not (settings.objects_dir / "models").exists()
    assert register(client, tiny_model_dir, id="m").status_code == 201
    again = register(client, tiny_model_dir, id="m")
    assert again.status_code == 409 and again.json()["error"]["code"] == "model_exists"


def test_a_prompt_over_max_prompt_tokens_is_a_422_naming_the_first_row_and_no_job_is_stored(
    client: TestClient,
) -> None:
    rows = [*ROWS[:2], {"prompt": "1234567890", "answer": "1"}, {"prompt": "12345678901", "answer": "1"}]
    file_id = upload(client, rows)
    r = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, file_id, max_prompt_tokens=8))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["param"] == "training_file" and error["code"] == "prompt_too_long"
    assert error["message"].startswith("training_file row 3: the prompt is 10 tokens")
    assert "max_prompt_tokens=8" in error["message"]
    assert client.get("/v1/fine_tuning/jobs").json()["data"] == []
    assert client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, file_id, max_prompt_tokens=11)).status_code == 201

    body = job_body(TINY_ID, upload(client, ROWS), max_prompt_tokens=10)
    body["validation_file"] = file_id  # the validation file is checked too
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 422 and r.json()["error"]["param"] == "validation_file"
    assert r.json()["error"]["message"].startswith("validation_file row 4: the prompt is 11 tokens")


def test_chat_template_kwargs_is_a_job_field_and_reaches_the_worker(client: TestClient) -> None:
    body = job_body(TINY_ID, upload(client, ROWS), chat_template_kwargs={"enable_thinking": False})
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    hp = r.json()["method"]["reinforcement"]["hyperparameters"]
    assert hp["chat_template_kwargs"] == {"enable_thinking": False}
    bad = job_body(TINY_ID, upload(client, ROWS), chat_template_kwargs={"x": {"nested": 1}})
    assert client.post("/v1/fine_tuning/jobs", json=bad).status_code == 422


@pytest.mark.slow
def test_the_admin_cli_adds_lists_and_removes_models(settings: ApiSettings, tiny_model_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("S3_ENDPOINT_URL", "S3_BUCKET")}
    env |= {"DATABASE_URL": settings.db_url, "STATE_DIR": str(settings.state_dir), "MODEL_CATALOG_DIR": "/nowhere"}

    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "api.admin", "models", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    added = admin("add", str(tiny_model_dir), "--hub-id", "org/tiny")
    assert added.returncode == 0, added.stderr
    assert added.stdout == "tiny\n"  # the hub id's name; only the id on stdout
    assert "LlamaForCausalLM" in added.stderr and "chat template no" in added.stderr
    refused = admin("add", str(tiny_model_dir / "nowhere"))
    assert refused.returncode == 1 and "no such folder" in refused.stderr
    listed = admin("list").stdout.splitlines()
    assert listed[0].split("\t")[:2] == ["id", "architecture"] and listed[1].split("\t")[:2] == [
        "tiny",
        "LlamaForCausalLM",
    ]
    assert admin("remove", "tiny").returncode == 0
    assert admin("list").stdout.count("\n") == 1


def test_the_inference_launcher_serves_a_registered_model_from_the_node_cache(
    client: TestClient, settings: ApiSettings, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """worker.inference_server: not in the catalog, so it asks the registry (the internal route, worker token) and
    fetches the files into the node's cache, held across the exec into vLLM."""
    from runtime.internal import ModelSource
    from worker import inference_server
    from worker.client import InternalClient

    worker = {"Authorization": "Bearer t0k"}
    assert client.get("/internal/models/tiny-srv", headers=worker).status_code == 404
    assert client.get("/internal/models/tiny-srv").status_code == 401
    detail = register(client, tiny_model_dir, id="tiny-srv").json()
    source = client.get("/internal/models/tiny-srv", headers=worker).json()
    assert source["digest"] == detail["sha256"] and source["object_prefix"] == detail["object_prefix"]

    def via_test_client(self: InternalClient, model_id: str) -> ModelSource | None:
        r = client.get(f"/internal/models/{model_id}", headers=worker)
        return ModelSource.model_validate(r.json()) if r.status_code == 200 else None

    monkeypatch.setattr(InternalClient, "model_source", via_test_client)
    for key, value in {
        "STATE_DIR": str(settings.state_dir),
        "MODEL_CATALOG_DIR": str(settings.state_dir / "empty-catalog"),
        "WORKER_TOKEN": "t0k",
    }.items():
        monkeypatch.setenv(key, value)
    folder = inference_server.model_folder("tiny-srv")
    assert folder == settings.state_dir / "model-cache" / detail["sha256"]
    assert (folder / "config.json").read_bytes() == (tiny_model_dir / "config.json").read_bytes()
    with pytest.raises(SystemExit, match="the model registry has no 'nope'"):
        inference_server.model_folder("nope")
