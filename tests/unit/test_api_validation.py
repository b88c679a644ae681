"""The public API's validation and state rules, on a real SQLite schema built by Alembic (no services)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from api.core.settings import ApiSettings
from api.main import create_app
from tests.helpers import ARITH_ROWS, job_body, jsonl, metrics_event, migrate
from tests.tiny_model import TINY_ID


def upload(client: TestClient, body: bytes, name: str = "d.jsonl") -> dict:
    return client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": (name, body)}).json()


def count(settings: ApiSettings, table: str) -> int:
    with create_engine(settings.db_url).connect() as conn:
        return conn.execute(text(f"select count(*) from {table}")).scalar_one()


def test_upload_stores_counts_and_hash(client: TestClient, settings: ApiSettings) -> None:
    body = jsonl(ARITH_ROWS) + b"\n"
    f = upload(client, body)
    assert f["object"] == "file" and f["row_count"] == len(ARITH_ROWS) and f["bytes"] == len(body)
    import hashlib

    assert f["sha256"] == hashlib.sha256(body).hexdigest()
    assert client.get(f"/v1/files/{f['id']}").json()["id"] == f["id"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"prompt": "a"}\n{"prompt": "b"\n', "line 2: not valid JSON"),
        (b'{"prompt": "a"}\n\n[1, 2]\n', "line 3: expected a JSON object"),
        (b'{"prompt": "a"}\n{"answer": "1"}\n', "line 2: a row needs a 'prompt' string or a 'messages' list"),
        (b'{"prompt": "a"}\n{"prompt": "\xff"}\n', "line 2: not UTF-8"),
        (b'{"messages": [{"role": "user"}]}\n', "line 1: messages[0].content must be a string or a list of text parts"),
        (b"\n\n", "file has no rows"),
    ],
)
def test_bad_jsonl_names_the_line_and_stores_nothing(
    client: TestClient, settings: ApiSettings, body: bytes, reason: str
) -> None:
    r = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", body)})
    assert r.status_code == 400
    err = r.json()["error"]
    assert reason in err["message"] and err["param"] == "file" and err["type"] == "invalid_request_error"
    assert count(settings, "files") == 0
    assert not any(p.is_file() for p in settings.objects_dir.rglob("*"))


def test_upload_over_limit_is_413(tmp_path: Path, catalog_dir: Path) -> None:
    s = ApiSettings(state_dir=tmp_path / "s", model_catalog_dir=catalog_dir, max_upload_bytes=20)
    migrate(s.db_url)
    with TestClient(create_app(s)) as c:
        r = c.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    assert r.status_code == 413 and "20 byte" in r.json()["error"]["message"]


def test_unknown_file_is_404(client: TestClient) -> None:
    r = client.get("/v1/files/file-nope")
    assert r.status_code == 404 and r.json()["error"]["param"] == "file_id"


def test_job_validation_errors_name_the_param(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    cases = [
        (job_body("no-such-model", fid), 400, "model", "unknown model"),
        (job_body(TINY_ID, "file-missing"), 404, "training_file", "no file"),
        (job_body(TINY_ID, fid, group_size=1), 422, "method.reinforcement.hyperparameters.group_size", "greater"),
        (job_body(TINY_ID, fid, beta=-1), 422, "method.reinforcement.hyperparameters.beta", "greater"),
        (job_body(TINY_ID, fid, batch_size=99), 422, "method.reinforcement.hyperparameters.batch_size", "larger"),
        (job_body(TINY_ID, fid, grup_size=3), 422, "method.reinforcement.hyperparameters.grup_size", "Extra"),
    ]
    bad_grader = job_body(TINY_ID, fid)
    bad_grader["method"]["reinforcement"]["grader"]["source"] = "def nope(:"
    cases.append((bad_grader, 422, "method.reinforcement.grader.source", "does not parse"))
    for body, status, param, words in cases:
        r = client.post("/v1/fine_tuning/jobs", json=body)
        assert r.status_code == status, (param, r.json())
        err = r.json()["error"]
        assert err["param"] == param and words in err["message"], err
    assert count(settings, "jobs") == 0


def test_job_create_list_get_and_cancel_rules(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    r = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid, max_steps=None, n_epochs=2))
    assert r.status_code == 201
    job = r.json()
    assert job["object"] == "fine_tuning.job" and job["status"] == "queued" and job["total_steps"] == 16
    assert job["hyperparameters"]["group_size"] == 4 and job["method"]["type"] == "reinforcement"
    assert client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["id"] == job["id"]
    listed = client.get("/v1/fine_tuning/jobs").json()
    assert listed["object"] == "list" and [j["id"] for j in listed["data"]] == [job["id"]]
    # the run_job message really reached the (filesystem) broker
    assert any(p.is_file() for p in (settings.state_dir / "broker").iterdir())

    c = client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").json()
    assert c["status"] == "cancelled" and c["finished_at"] is not None
    again = client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")
    assert again.status_code == 200  # idempotent
    events = client.get(f"/v1/fine_tuning/jobs/{job['id']}/events").json()["data"]
    assert events[0]["message"] == "Job cancelled before it started"


def test_cancel_of_a_finished_job_is_409(client: TestClient, settings: ApiSettings) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid)).json()
    with create_engine(settings.db_url).begin() as conn:
        conn.execute(text("update jobs set status='succeeded' where id=:id"), {"id": job["id"]})
    r = client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")
    assert r.status_code == 409 and r.json()["error"]["code"] == "job_not_cancellable"


def test_internal_api_needs_the_worker_token_and_fences_epochs(client: TestClient) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid)).json()
    url = f"/internal/jobs/{job['id']}"
    mine = {"worker_id": "w", "claim_id": "claim-one"}
    assert client.post(f"{url}/claim", json=mine).status_code == 401
    auth = {"Authorization": "Bearer t0k"}
    claim = client.post(f"{url}/claim", json=mine, headers=auth).json()
    assert claim["epoch"] == 1 and claim["grader"]["type"] == "python" and claim["resume"] is None
    # the same claim retried (its answer was lost) gets the same lease back
    assert client.post(f"{url}/claim", json=mine, headers=auth).json()["epoch"] == 1
    # a second delivery cannot claim a job whose lease is alive: it is told when to come back
    other = client.post(f"{url}/claim", json={"worker_id": "w2", "claim_id": "claim-two"}, headers=auth)
    assert other.status_code == 409 and other.json()["error"]["code"] == "lease_held"
    assert 500 <= int(other.headers["Retry-After"]) <= 600
    stale = client.post(f"{url}/events", json={"epoch": 0, "events": [{"message": "x"}]}, headers=auth)
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "stale_lease"
    ev = metrics_event(1) | {"message": "s1"}
    for _ in range(2):  # a retried post never duplicates a metrics point
        r = client.post(f"{url}/events", json={"epoch": 1, "events": [ev]}, headers=auth)
        assert r.json()["stop"] is None
    events = client.get(f"/v1/fine_tuning/jobs/{job['id']}/events?limit=100").json()["data"]
    assert [e["message"] for e in events].count("s1") == 1
    assert client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["steps_done"] == 1
    # success needs a registered checkpoint
    r = client.post(f"{url}/finish", json={"epoch": 1, "status": "succeeded"}, headers=auth)
    assert r.status_code == 409 and r.json()["error"]["code"] == "no_checkpoint"
    client.post(f"{url}/finish", json={"epoch": 1, "status": "failed", "error_message": "boom"}, headers=auth)
    got = client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()
    assert got["status"] == "failed" and got["error"]["message"] == "boom"


def test_migrations_match_the_models(settings: ApiSettings) -> None:
    from tests.helpers import alembic_check

    alembic_check(settings.db_url)


def test_cancel_reaches_the_worker_and_a_dead_workers_cancelling_job_ends(
    client: TestClient, settings: ApiSettings
) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid)).json()
    url, auth = f"/internal/jobs/{job['id']}", {"Authorization": "Bearer t0k"}
    client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-one"}, headers=auth)
    assert client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").json()["status"] == "cancelling"
    r = client.post(f"{url}/events", json={"epoch": 1, "events": [{"message": "step done"}]}, headers=auth)
    assert r.json()["stop"] == "cancel"
    # the worker dies without acknowledging: once its lease is over, the next claim finishes the cancel
    with create_engine(settings.db_url).begin() as conn:
        conn.execute(text("update jobs set lease_expires_at = 0 where id = :id"), {"id": job["id"]})
    r = client.post(f"{url}/claim", json={"worker_id": "w2", "claim_id": "claim-two"}, headers=auth)
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_claimable"
    assert client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["status"] == "cancelled"


def test_expired_lease_is_reclaimed_with_a_new_epoch_and_the_last_checkpoint(
    client: TestClient, settings: ApiSettings
) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid)).json()
    url, auth = f"/internal/jobs/{job['id']}", {"Authorization": "Bearer t0k"}
    client.post(f"{url}/claim", json={"worker_id": "w", "claim_id": "claim-one"}, headers=auth)
    ck = {"epoch": 1, "step_number": 2, "object_key": "a.tar", "state_key": "a.state.pt", "metrics": {}}
    assert client.post(f"{url}/checkpoints", json=ck, headers=auth).status_code == 200
    with create_engine(settings.db_url).begin() as conn:
        conn.execute(text("update jobs set lease_expires_at = 0, steps_done = 2 where id = :id"), {"id": job["id"]})
    claim = client.post(f"{url}/claim", json={"worker_id": "w2", "claim_id": "claim-two"}, headers=auth).json()
    assert claim["epoch"] == 2
    assert claim["resume"] == {"step": 2, "adapter_key": "a.tar", "state_key": "a.state.pt"}
    # the old worker is fenced out
    old = client.post(f"{url}/events", json={"epoch": 1, "events": [{"message": "late"}]}, headers=auth)
    assert old.status_code == 409
    events = client.get(f"/v1/fine_tuning/jobs/{job['id']}/events").json()["data"]
    assert events[0]["message"].startswith("Resumed from step 2 after worker loss at step 2 (attempt 2 of 3")
    assert events[0]["level"] == "warn"


def test_malformed_json_body_is_a_400(client: TestClient) -> None:
    r = client.post("/v1/fine_tuning/jobs", content=b'{"model": ', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"


def test_utf8_bom_and_unknown_cursor(client: TestClient) -> None:
    assert upload(client, b"\xef\xbb\xbf" + jsonl(ARITH_ROWS))["row_count"] == len(ARITH_ROWS)
    r = client.get("/v1/fine_tuning/jobs", params={"after": "ftjob-nope"})
    assert r.status_code == 404 and r.json()["error"]["param"] == "after"


def test_worker_token_required_beyond_one_machine(tmp_path: Path) -> None:
    s = ApiSettings(state_dir=tmp_path, broker_url="redis://127.0.0.1:6379/0")
    with pytest.raises(ValueError, match="WORKER_TOKEN must be set"):
        _ = s.internal_token


def test_a_recipe_is_expanded_in_the_job_object(client: TestClient) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    body = job_body(TINY_ID, fid, recipe="dapo", group_size=4)
    job = client.post("/v1/fine_tuning/jobs", json=body).json()
    hp = job["hyperparameters"]
    assert hp["recipe"] == "dapo" and hp["group_size"] == 4  # the user's value wins
    assert (hp["epsilon_high"], hp["loss_aggregation"], hp["beta"]) == (0.28, "token_mean", 0.0)
    assert hp["mask_truncated_completions"] is True and hp["overlong_buffer_fraction"] == 0.2
    assert hp["dynamic_sampling"] is True
    # the paper's full fine-tuning learning rate, scaled for LoRA, and the events say where it came from
    body["method"]["reinforcement"]["hyperparameters"].pop("learning_rate")  # the helper's own value
    job = client.post("/v1/fine_tuning/jobs", json=body).json()
    assert job["hyperparameters"]["learning_rate"] == pytest.approx(1e-4)  # 1e-6 x 10, floored at the LoRA default
    events = client.get(f"/v1/fine_tuning/jobs/{job['id']}/events").json()["data"]
    note = [e["message"] for e in events if e["message"].startswith("learning_rate")]
    assert note and "recipe dapo's 1e-06" in note[0] and "x 10 = 1e-05, raised to the LoRA default" in note[0]


def test_the_learning_rate_event_is_left_out_when_the_user_sets_it(client: TestClient) -> None:
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    body = job_body(TINY_ID, fid)
    body["method"]["reinforcement"]["hyperparameters"].pop("learning_rate")
    default = client.post("/v1/fine_tuning/jobs", json=body).json()
    given = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid, learning_rate=3e-4)).json()
    notes = {}
    for job in (default, given):
        events = client.get(f"/v1/fine_tuning/jobs/{job['id']}/events").json()["data"]
        notes[job["id"]] = [e["message"] for e in events if e["message"].startswith("learning_rate")]
    assert "the default for a LoRA adapter" in notes[default["id"]][0]
    assert notes[given["id"]] == [] and given["hyperparameters"]["learning_rate"] == 3e-4


@pytest.mark.parametrize("recipe", [["dapo"], {"name": "dapo"}, 3, "nope"])
def test_a_recipe_that_is_not_a_known_name_is_a_422_not_a_500(client: TestClient, recipe: object) -> None:
    """Found by schemathesis: an unhashable recipe (a list) crashed the preset lookup before the Literal check."""
    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    r = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid, recipe=recipe))
    assert r.status_code == 422, r.text
    assert "recipe" in r.json()["error"]["param"]


def test_service_caps_lower_hyperparameters_and_say_so(tmp_path: Path, catalog_dir: Path) -> None:
    s = ApiSettings(
        state_dir=tmp_path / "state",
        model_catalog_dir=catalog_dir,
        worker_token="t0k",
        cap_max_completion_tokens=16,
        cap_group_size=4,
    )
    migrate(s.db_url)
    with TestClient(create_app(s)) as client:
        fid = upload(client, jsonl(ARITH_ROWS))["id"]
        job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid, max_completion_tokens=64)).json()
        assert job["hyperparameters"]["max_completion_tokens"] == 16
        events = client.get(f"/v1/fine_tuning/jobs/{job['id']}/events").json()["data"]
        capped = [e for e in events if "capped" in e["message"]]
        assert [(e["level"], e["message"]) for e in capped] == [
            ("warn", "max_completion_tokens capped from 64 to 16 by this service")
        ]
        # a cap that makes the config inconsistent is a 422 naming the field, not a silently different run
        bad = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid, gfpo_sample_size=8))
        assert bad.status_code == 422 and "gfpo_sample_size" in bad.json()["error"]["message"]


def test_best_checkpoint_is_the_highest_validation_reward(client: TestClient, settings: ApiSettings) -> None:
    from sqlalchemy.orm import Session

    from api.db.models import Checkpoint

    fid = upload(client, jsonl(ARITH_ROWS))["id"]
    job = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, fid)).json()
    with Session(create_engine(settings.db_url)) as session:
        for step, valid in ((1, 0.2), (2, 0.5), (3, 0.4)):
            session.add(
                Checkpoint(
                    id=f"ftckpt-{step}",
                    job_id=job["id"],
                    step_number=step,
                    object_key=f"k{step}",
                    metrics={"valid_reward_mean": valid},
                )
            )
        session.commit()
    data = client.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert [(c["step_number"], c["best"]) for c in data] == [(3, False), (2, True), (1, False)]


def test_openai_integrations_are_accepted_stored_and_sent_to_the_worker(client: TestClient) -> None:
    file_id = upload(client, jsonl(ARITH_ROWS))["id"]
    wandb = {"project": "p", "name": "n", "entity": "team", "tags": ["a", "b"]}
    body = job_body(TINY_ID, file_id) | {"integrations": [{"type": "wandb", "wandb": wandb}]}
    r = client.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["integrations"] == [{"type": "wandb", "wandb": wandb}]
    claim = client.post(
        f"/internal/jobs/{r.json()['id']}/claim",
        json={"worker_id": "w", "claim_id": "claim-0001"},
        headers={"Authorization": "Bearer t0k"},
    ).json()
    assert claim["integrations"] == [{"type": "wandb", "wandb": wandb}]
    for bad in ({"type": "comet", "comet": {}}, {"type": "wandb", "wandb": {"name": "no project"}}):
        r = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, file_id) | {"integrations": [bad]})
        assert r.status_code == 422 and "integrations" in r.json()["error"]["param"], r.text
    plain = client.post("/v1/fine_tuning/jobs", json=job_body(TINY_ID, file_id)).json()
    assert plain["integrations"] is None
