"""A training-API session's life on the API's side, with a worker played through the internal API: the order
requests reach the worker in, the fence, closing, idling, a client that went away, a lost worker (the reaper), the
long poll, and the run's series as /v1 draws it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.reaper import reap
from tests.tiny_model import TINY_ID
from tests.training_objects import WORKER, fwdbwd_body, result_of

API = "/api/v1"
H = {"X-API-Key": "tml-anything"}  # no keys configured: the default project


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "training_poll_seconds": 0.3}


def start(client: TestClient) -> tuple[str, str]:
    """A session with one training run (its create_model still pending); (session id, run id)."""
    sid = client.post(f"{API}/create_session", json={}, headers=H).json()["session_id"]
    body = {"session_id": sid, "model_seq_id": 0, "base_model": TINY_ID, "lora_config": {"rank": 4}}
    made = client.post(f"{API}/create_model", json=body, headers=H)
    assert made.status_code == 200, made.text
    return sid, made.json()["model_id"]


def internal(client: TestClient, sid: str, what: str, body: dict[str, Any]) -> Any:
    return client.post(f"/internal/training/sessions/{sid}/{what}", json=body, headers=WORKER)


def take(client: TestClient, sid: str, claim: str = "c-1") -> dict[str, Any]:
    got = internal(client, sid, "next", {"claim_id": claim, "wait_seconds": 0}).json()
    assert got["request"], got
    return got["request"]


def answer(client: TestClient, sid: str, req: dict[str, Any], result: dict[str, Any], claim: str = "c-1") -> Any:
    return internal(client, sid, f"results/{req['id']}", {"claim_id": claim, "result": result})


def sql(settings: ApiSettings, statement: str, **params: Any) -> None:
    with create_engine(settings.db_url).begin() as conn:
        conn.execute(text(statement), params)


def test_requests_reach_the_worker_in_order_and_only_the_claim_holder_writes(client: TestClient) -> None:
    sid, run = start(client)
    assert internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"}).status_code == 200
    assert internal(client, sid, "claim", {"worker_id": "w2", "claim_id": "c-2"}).status_code == 409
    optim = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H).json()
    save = client.post(f"{API}/save_weights", json={"model_id": run, "path": "a"}, headers=H).json()
    kinds = []
    for _ in range(3):
        req = take(client, sid)
        kinds.append(req["request"]["kind"])
        stale = answer(client, sid, req, result_of(req), claim="c-2")
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "stale_claim"
        answer(client, sid, req, result_of(req))
    assert kinds == ["create_model", "optim_step", "save_weights"]
    got = client.post(f"{API}/retrieve_future", json={"request_id": optim["request_id"]}, headers=H)
    assert got.json() == {"metrics": {}, "type": "optim_step"}  # the SDK's shape, made by the API from the result
    saved = client.post(f"{API}/retrieve_future", json={"request_id": save["request_id"]}, headers=H)
    assert saved.json() == {"path": f"tinker://{run}/weights/a", "size_bytes": 0, "type": "save_weights"}
    listed = client.get(f"{API}/training_runs/{run}/checkpoints", headers=H).json()["checkpoints"]
    assert [c["tinker_path"] for c in listed] == [f"tinker://{run}/weights/a"]  # registered when the save landed


def test_a_future_is_long_polled_then_try_again(client: TestClient) -> None:
    _, run = start(client)
    assert client.post(f"{API}/retrieve_future", json={"request_id": "req-nope"}, headers=H).status_code == 404
    fut = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H).json()
    started = time.monotonic()
    waited = client.post(f"{API}/retrieve_future", json={"request_id": fut["request_id"]}, headers=H).json()
    # held for about training_poll_seconds (0.3 s here), not answered at once: the SDK polls again without a pause
    assert waited["type"] == "try_again" and 0.2 < time.monotonic() - started < 5


def test_closing_the_session_fails_what_is_pending_and_tells_the_worker(client: TestClient) -> None:
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    create = take(client, sid)
    pending = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H).json()
    closed = client.post(f"{API}/sessions/{sid}/finish", json={"reason": {"type": "success"}}, headers=H)
    assert closed.json()["status"] == "finished"
    failed = client.post(f"{API}/retrieve_future", json={"request_id": pending["request_id"]}, headers=H).json()
    assert failed["category"] == "user" and "closed" in failed["error"]
    assert (
        answer(client, sid, create, result_of(create)).json()["stop"] == "finished"
    )  # the running one's result is refused nothing
    assert internal(client, sid, "next", {"claim_id": "c-1", "wait_seconds": 0}).json()["stop"] == "finished"
    refused = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "session_finished"
    heartbeat = client.post(f"{API}/session_heartbeat", json={"session_id": sid}, headers=H)
    assert heartbeat.status_code == 410  # ends the SDK's heartbeat loop


def test_an_idle_session_expires_and_says_so(client: TestClient, settings: ApiSettings) -> None:
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    created = take(client, sid)
    answer(client, sid, created, result_of(created))
    released = internal(client, sid, "release", {"claim_id": "c-1", "reason": "idle", "message": "idle for 900 s"})
    assert released.status_code == 200
    refused = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "session_expired"
    assert "idle for 900 s" in refused.json()["error"]["message"]
    assert "create_training_client_from_state" in refused.json()["error"]["message"]


def test_a_client_that_stopped_heartbeating_frees_the_worker(client: TestClient, settings: ApiSettings) -> None:
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    created = take(client, sid)
    answer(client, sid, created, result_of(created))
    assert internal(client, sid, "next", {"claim_id": "c-1", "wait_seconds": 0}).json()["stop"] is None
    sql(settings, "update training_sessions set heartbeat_at = :t where id = :id", t=int(time.time()) - 61, id=sid)
    assert internal(client, sid, "next", {"claim_id": "c-1", "wait_seconds": 0}).json()["stop"] == "finished"
    refused = client.post(f"{API}/get_info", json={"model_id": run}, headers=H)
    assert refused.status_code == 200  # describing the run needs no worker
    again = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H)
    assert again.json()["error"]["code"] == "session_expired" and "heartbeat" in again.json()["error"]["message"]


class Rung:
    def __init__(self) -> None:
        self.sessions: list[str] = []

    def ring(self, job_id: str) -> None:
        raise AssertionError("no job here")

    def join(self, job_id: str, epoch: int) -> None:
        raise AssertionError("no job here")

    def ring_eval(self, run_id: str) -> None:
        raise AssertionError("no eval here")

    def ring_session(self, session_id: str) -> None:
        self.sessions.append(session_id)


def test_the_reaper_fails_a_lost_workers_futures_and_rings_unclaimed_sessions(
    client: TestClient, settings: ApiSettings
) -> None:
    engine = create_engine(settings.db_url)
    sid, run = start(client)
    # nobody took the session: rung again once its doorbell is older than requeue_after_seconds
    sql(settings, "update training_sessions set enqueued_at = 1 where id = :id", id=sid)
    with Session(engine) as db:
        bell = Rung()
        reap(db, bell, settings)
    assert bell.sessions == [sid]
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    running = take(client, sid)
    sql(settings, "update training_sessions set lease_expires_at = 1 where id = :id", id=sid)  # its worker died
    with Session(engine) as db:
        reap(db, Rung(), settings)
    failed = client.post(f"{API}/retrieve_future", json={"request_id": running["id"]}, headers=H).json()
    assert failed["category"] == "server" and "lease expired" in failed["error"]
    late = answer(client, sid, running, result_of(running))
    assert late.status_code == 409  # the dead worker, back, can write nothing
    refused = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H)
    assert refused.json()["error"]["code"] == "session_lost"


def test_the_runs_series_sums_each_steps_calls_and_merges_what_the_client_reports(client: TestClient) -> None:
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    created = take(client, sid)
    answer(client, sid, created, result_of(created))
    v1 = {"Authorization": "Bearer anything"}
    for step, losses in enumerate(([4.0, 2.0], [3.0]), start=1):
        for loss in losses:  # forward_backward results as the worker posts them (the protobuf is made at retrieval)
            fb = client.post(f"{API}/forward_backward", content=fwdbwd_body(run), headers=H)
            assert fb.status_code == 200, fb.text
            req = take(client, sid)
            fields = {"logprobs": [[-1.0, -2.0]], "metrics": {"loss:sum": loss, "tokens:sum": 2.0}}
            answer(client, sid, req, result_of(req, **fields))
        client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H)
        req = take(client, sid)
        answer(client, sid, req, result_of(req, metrics={"grad_norm:mean": float(step), "learning_rate:mean": 1e-4}))
        report = {"step": step, "metrics": {"reward": step / 4}}
        assert client.post(f"/v1/training_runs/{run}/metrics", json=report, headers=v1).status_code == 200
    rows = client.get(f"/v1/training_runs/{run}/metrics", headers=v1).json()["data"]
    assert [(r["step"], r["loss"], r["loss_per_token"], r["grad_norm"], r["reported"]) for r in rows] == [
        (1, 6.0, 1.5, 1.0, {"reward": 0.25}),
        (2, 3.0, 1.5, 2.0, {"reward": 0.5}),
    ]
    got = client.get(f"/v1/training_runs/{run}", headers=v1).json()
    assert got["steps"] == 2 and got["status"] == "active" and got["lora_rank"] == 4


def test_a_retried_call_is_one_request_and_two_saves_of_one_name_one_checkpoint(client: TestClient) -> None:
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    created = take(client, sid)
    answer(client, sid, created, result_of(created))
    step = {"model_id": run, "adam_params": {}, "seq_id": 7}
    first = client.post(f"{API}/optim_step", json=step, headers=H).json()
    assert client.post(f"{API}/optim_step", json=step, headers=H).json() == first  # the SDK's retry of a lost answer
    fb = client.post(f"{API}/forward_backward", content=fwdbwd_body(run, seq_id=8), headers=H).json()
    assert client.post(f"{API}/forward_backward", content=fwdbwd_body(run, seq_id=8), headers=H).json() == fb
    saves = [
        client.post(f"{API}/save_weights", json={"model_id": run, "path": "ck", "seq_id": n}, headers=H).json()
        for n in (9, 10)  # both queued before either landed
    ]
    kinds = []
    while (got := internal(client, sid, "next", {"claim_id": "c-1", "wait_seconds": 0}).json())["request"]:
        kinds.append(got["request"]["request"]["kind"])
        assert answer(client, sid, got["request"], result_of(got["request"])).status_code == 200
    assert kinds == ["optim_step", "forward_backward", "save_weights", "save_weights"]  # one each, in order
    listed = client.get(f"{API}/training_runs/{run}/checkpoints", headers=H).json()["checkpoints"]
    assert [c["tinker_path"] for c in listed] == [f"tinker://{run}/weights/ck"]
    replay = client.post(f"{API}/save_weights", json={"model_id": run, "path": "ck", "seq_id": 9}, headers=H)
    assert replay.json() == saves[0]  # a retry after it landed: its future, not "exists"
    exists = client.post(f"{API}/save_weights", json={"model_id": run, "path": "ck", "seq_id": 11}, headers=H)
    assert exists.status_code == 400 and "exists" in exists.json()["error"]["message"]


def test_the_reaper_fails_what_an_ended_session_left_open_and_drops_old_results(
    client: TestClient, settings: ApiSettings
) -> None:
    sid, run = start(client)
    pending = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H).json()
    sql(settings, "update training_sessions set status = 'expired' where id = :id", id=sid)  # ended, none failed
    with Session(create_engine(settings.db_url)) as db:
        reap(db, Rung(), settings)
        db.commit()
    failed = client.post(f"{API}/retrieve_future", json={"request_id": pending["request_id"]}, headers=H).json()
    assert failed["category"] == "user" and "ended" in failed["error"]
    other, run2 = start(client)
    internal(client, other, "claim", {"worker_id": "w", "claim_id": "c-1"})
    req = take(client, other)
    answer(client, other, req, result_of(req))
    fb = client.post(f"{API}/forward_backward", content=fwdbwd_body(run2), headers=H).json()
    done = take(client, other)
    answer(client, other, done, result_of(done, logprobs=[[-1.0, -2.0]], metrics={"loss:sum": 3.0, "tokens:sum": 2.0}))
    sql(settings, "update training_requests set result_expires_at = 1 where id = :id", id=fb["request_id"])
    with Session(create_engine(settings.db_url)) as db:
        reap(db, Rung(), settings)
        db.commit()
    gone = client.post(f"{API}/retrieve_future", json={"request_id": fb["request_id"]}, headers=H).json()
    assert "expired" in gone["error"]
    series = client.get(f"/v1/training_runs/{run2}/metrics", headers={"Authorization": "Bearer x"}).json()
    assert series["data"] == []  # no optim_step yet: its loss waits for the step that closes it


def test_a_sampling_client_whose_checkpoint_was_deleted_refuses_to_sample(client: TestClient) -> None:
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    created = take(client, sid)
    answer(client, sid, created, result_of(created))
    client.post(f"{API}/save_weights_for_sampler", json={"model_id": run, "path": "s"}, headers=H)
    saved = take(client, sid)
    answer(client, sid, saved, result_of(saved, size_bytes=1))
    body = {"session_id": sid, "sampling_session_seq_id": 0, "model_path": f"tinker://{run}/sampler_weights/s"}
    sampler = client.post(f"{API}/create_sampling_session", json=body, headers=H).json()["sampling_session_id"]
    assert client.delete(f"{API}/training_runs/{run}/checkpoints/sampler_weights/s", headers=H).status_code == 200
    sample = {
        "sampling_session_id": sampler,
        "prompt": {"chunks": [{"tokens": [1]}]},
        "num_samples": 1,
        "sampling_params": {"max_tokens": 1},
    }
    refused = client.post(f"{API}/asample", json=sample, headers=H)
    assert refused.status_code == 404 and "deleted" in refused.json()["error"]["message"]


def test_reported_metrics_are_finite_numbers_with_short_names(client: TestClient) -> None:
    _, run = start(client)
    v1 = {"Authorization": "Bearer x"}
    infinite = '{"step": 1, "metrics": {"reward": Infinity}}'  # what json.dumps writes for inf
    r = client.post(
        f"/v1/training_runs/{run}/metrics", content=infinite, headers=v1 | {"content-type": "application/json"}
    )
    assert r.status_code == 422, r.text
    for bad in ({"x" * 65: 1.0}, {}):
        r = client.post(f"/v1/training_runs/{run}/metrics", json={"step": 1, "metrics": bad}, headers=v1)
        assert r.status_code == 422, (bad, r.text)
    many = {f"m{i}": 1.0 for i in range(64)}
    assert client.post(f"/v1/training_runs/{run}/metrics", json={"step": 1, "metrics": many}, headers=v1).is_success
    more = client.post(f"/v1/training_runs/{run}/metrics", json={"step": 1, "metrics": {"one_more": 1.0}}, headers=v1)
    assert more.status_code == 400 and more.json()["error"]["param"] == "metrics"


def test_samples_queued_together_reach_the_worker_in_one_answer_up_to_the_next_other_call(client: TestClient) -> None:
    """A worker that asks for a batch gets the sample requests queued right after a sample with it, in order and
    all running; a training call between them ends the batch (it must run after the samples before it and before
    those after it); a worker asking for one gets one."""
    sid, run = start(client)
    internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"})
    created = take(client, sid)
    answer(client, sid, created, result_of(created))
    body = {"session_id": sid, "sampling_session_seq_id": 0, "base_model": TINY_ID}
    sampler = client.post(f"{API}/create_sampling_session", json=body, headers=H).json()["sampling_session_id"]

    def sample(n: int) -> str:
        got = client.post(
            f"{API}/asample",
            json={
                "sampling_session_id": sampler,
                "prompt": {"chunks": [{"tokens": [1, n]}]},
                "num_samples": 1,
                "sampling_params": {"max_tokens": 2},
            },
            headers=H,
        )
        assert got.status_code == 200, got.text
        return str(got.json()["request_id"])

    first = [sample(n) for n in (3, 4, 5)]
    optim = client.post(f"{API}/optim_step", json={"model_id": run, "adam_params": {}}, headers=H).json()
    after = [sample(n) for n in (6, 7)]
    asked = {"claim_id": "c-1", "wait_seconds": 0, "max_batch": 8}
    got = internal(client, sid, "next", asked).json()
    items = [got["request"], *got["more"]]
    assert [i["id"] for i in items] == first and all(i["request"]["kind"] == "sample" for i in items)
    assert [i["request"]["prompt"] for i in items] == [[1, 3], [1, 4], [1, 5]]
    for item in items:
        assert answer(client, sid, item, result_of(item, decoded_with=3)).status_code == 200
    step = internal(client, sid, "next", asked).json()
    assert step["request"]["id"] == optim["request_id"] and step["more"] == []
    answer(client, sid, step["request"], result_of(step["request"]))
    one = internal(client, sid, "next", {"claim_id": "c-1", "wait_seconds": 0}).json()  # max_batch 1
    assert one["request"]["id"] == after[0] and one["more"] == []
    rest = internal(client, sid, "next", asked).json()
    assert rest["request"]["id"] == after[1] and rest["more"] == []


def test_a_pool_claims_the_longest_waiting_session_of_a_base_it_holds(
    client: TestClient, settings: ApiSettings
) -> None:
    first, _ = start(client)
    second, _ = start(client)
    sql(settings, "UPDATE training_sessions SET enqueued_at = enqueued_at - 100 WHERE id = :s", s=second)

    def claim_next(bases: list[str], claim: str, shape: dict[str, Any] | None = None) -> Any:
        body = {"worker_id": "pool", "claim_id": claim, "bases": bases, "shape": shape}
        got = client.post("/internal/training/sessions/claim-next", json=body, headers=WORKER)
        assert got.status_code == 200, got.text
        return got.json()["claim"]

    assert claim_next(["another-model"], "c-x") is None  # their first requests need the tiny model
    # a pool of jobs lends its resident to runs of its adapter shape only (both create runs of rank 4, all layers)
    assert claim_next([TINY_ID], "c-y", {"rank": 16, "train_mlp": True, "train_attn": True}) is None
    assert claim_next([TINY_ID], "c-z", {"rank": 4, "train_mlp": False, "train_attn": True}) is None
    assert claim_next([TINY_ID], "c-1")["session_id"] == second  # the one that waited longest
    assert claim_next([TINY_ID], "c-2", {"rank": 4, "train_mlp": True, "train_attn": True})["session_id"] == first
    assert claim_next([TINY_ID], "c-3") is None  # both held now
    assert take(client, second)["request"]["kind"] == "create_model"  # the pool's claim id holds it
    with create_engine(settings.db_url).connect() as conn:
        shared = conn.execute(text("SELECT shared FROM usage_records WHERE subject_id = :s"), {"s": second}).scalar()
    assert shared  # billed the seconds its requests hold the device
    refused = client.post("/internal/training/sessions/claim-next", json={"worker_id": "w", "claim_id": "c"},
                          headers=WORKER)  # fmt: skip
    assert refused.status_code == 422


def test_a_run_asks_to_compute_alone_through_its_metadata_and_a_bad_value_is_refused(client: TestClient) -> None:
    """``user_metadata={"pool_exact": "true"}`` (the SDK's create_lora_training_client takes string metadata) reaches
    the worker's create request as ``exact``; a value that is not a yes or no is a 400 naming it, nothing stored."""
    sid = client.post(f"{API}/create_session", json={}, headers=H).json()["session_id"]
    body = {"session_id": sid, "model_seq_id": 0, "base_model": TINY_ID, "lora_config": {"rank": 4}}
    bad = client.post(f"{API}/create_model", json={**body, "user_metadata": {"pool_exact": "maybe"}}, headers=H)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "user_metadata.pool_exact", bad.text
    assert client.get(f"{API}/training_runs/{sid}:train:0", headers=H).status_code == 404  # nothing half-stored
    made = client.post(f"{API}/create_model", json={**body, "user_metadata": {"pool_exact": "true"}}, headers=H)
    assert made.status_code == 200, made.text
    assert internal(client, sid, "claim", {"worker_id": "w", "claim_id": "c-1"}).status_code == 200
    create = take(client, sid)["request"]
    assert create["kind"] == "create_model" and create["exact"] is True
