"""The inference fleet against fake OpenAI-compatible servers (tests/fake_inference.py): a model's requests routed
across its replicas by adapter (rendezvous order), moved to the next replica when one goes down and spread when one
is saturated; replicas registered by the operator; a replica started on demand through the internal API as a
worker drives it (requested, claimed, ready, idle, stopped) and metered as the service's serving time. The real
vLLM servers are exercised by tests/integration/test_inference_fleet.py."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from api.inference.router import REFRESH_SECONDS, Router
from tests.fake_inference import FakeInference
from tests.tiny_model import TINY_ID
from tests.unit.test_inference import WORKER, chat, trained_job

ADMIN = {"Authorization": "Bearer adm1n"}


@pytest.fixture
def fakes() -> Iterator[list[FakeInference]]:
    servers = [FakeInference(TINY_ID).start() for _ in range(2)]
    yield servers
    for s in servers:
        s.stop()


@pytest.fixture
def settings_overrides(fakes: list[FakeInference], tmp_path: Path) -> dict[str, Any]:
    return {
        "reaper": False,
        "webhook_dispatcher": False,
        "inference_endpoints": {TINY_ID: [f.url for f in fakes]},
        "inference_on_demand": False,
        "rate_limit_per_minute": 0,
        "admin_token": "adm1n",
    }


def router(client: TestClient) -> Router:
    app: Any = client.app
    r: Router = app.state.inference
    return r


def served_by(fakes: list[FakeInference], adapter: str) -> list[int]:
    """Which fakes answered requests for ``adapter``."""
    return [i for i, f in enumerate(fakes) if ("chat", adapter) in f.calls]


def wait_closed(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"port {port} still open")


def test_each_adapter_sticks_to_one_replica_and_moves_with_no_failed_request_when_it_stops(
    client: TestClient, settings: ApiSettings, fakes: list[FakeInference]
) -> None:
    jobs = [trained_job(client, settings, steps=(1,)) for _ in range(4)]
    models = {j["job"]["fine_tuned_model"]: j["checkpoints"][1]["id"] for j in jobs}
    for _ in range(3):
        for name in models:
            assert chat(client, name).status_code == 200
    homes = {adapter: served_by(fakes, adapter) for adapter in models.values()}
    assert all(len(h) == 1 for h in homes.values()), homes  # one replica each, every time
    for adapter, (home,) in homes.items():  # and each adapter is loaded there only
        assert adapter in fakes[home].adapters and adapter not in fakes[1 - home].adapters
    # the order is the rendezvous order: what any API process computes from the same replicas
    for adapter, (home,) in homes.items():
        assert router(client).order(TINY_ID, adapter)[0].url == fakes[home].url
    name, adapter = next(iter(models.items()))
    (home,) = homes[adapter]
    fakes[home].stop()
    wait_closed(fakes[home].port)
    for _ in range(3):  # the stopped replica's adapter is served by the other, no request failing
        r = chat(client, name)
        assert r.status_code == 200, r.text
    assert adapter in fakes[1 - home].adapters
    ranked = router(client).order(TINY_ID, adapter)
    assert [r.url for r in ranked] == [fakes[1 - home].url]  # the down one is skipped until it answers again


def test_a_saturated_replica_spreads_its_adapter_to_the_next(
    client: TestClient, settings: ApiSettings, fakes: list[FakeInference]
) -> None:
    name = trained_job(client, settings, steps=(1,))["job"]["fine_tuned_model"]
    settings.inference_replica_concurrency = 1
    first = router(client)
    assert chat(client, name).status_code == 200
    adapter = next(a for f in fakes for a in f.adapters)
    (home,) = served_by(fakes, adapter)
    fakes[home].delay = 1.0
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: chat(client, name), range(2)))
    assert all(r.status_code == 200 for r in answers)
    assert served_by(fakes, adapter) == [0, 1]  # the second request went to the next replica in order
    assert all(r.in_flight == 0 for r in first.known.replicas.values())


def test_the_operator_registers_lists_and_removes_replicas(
    client: TestClient, settings: ApiSettings, fakes: list[FakeInference]
) -> None:
    extra = FakeInference("other-model").start()
    try:
        r = client.post(
            "/v1/admin/inference/replicas", json={"base_model": "other-model", "url": extra.url + "/"}, headers=ADMIN
        )
        assert r.status_code == 201 and r.json()["url"] == extra.url, r.text
        replica = r.json()
        again = {"base_model": "other-model", "url": extra.url}
        assert client.post("/v1/admin/inference/replicas", json=again, headers=ADMIN).status_code == 409
        bad = client.post("/v1/admin/inference/replicas", json={"base_model": "x", "url": "ftp://h/v1"}, headers=ADMIN)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "url"
        for url in ("http://[::1/v1", "http://h:99999/v1", "http:///v1"):
            body = {"base_model": "x", "url": url}
            assert client.post("/v1/admin/inference/replicas", json=body, headers=ADMIN).status_code == 400, url
        assert client.get("/v1/admin/inference/replicas").status_code == 401
        listed = client.get("/v1/admin/inference/replicas", headers=ADMIN).json()["data"]
        assert [x["origin"] for x in listed] == ["config", "config", "admin"]
        assert {x["base_model"] for x in listed} == {TINY_ID, "other-model"}
        assert router(client).serving("other-model") == "ready"
        gone = client.delete(f"/v1/admin/inference/replicas/{replica['id']}", headers=ADMIN).json()
        assert gone["state"] == "stopped" and "operator" in gone["problem"]
        assert router(client).serving("other-model") == "not_served"
    finally:
        extra.stop()


def test_models_say_whether_they_are_served(client: TestClient, settings: ApiSettings) -> None:
    name = trained_job(client, settings, steps=(1,))["job"]["fine_tuned_model"]
    cards = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
    assert cards[TINY_ID]["serving"] == "ready" and cards[name]["serving"] == "ready"


class Rings:
    def __init__(self) -> None:
        self.served: list[str] = []

    def serve(self, replica_id: str) -> None:
        self.served.append(replica_id)


def test_a_model_with_no_replica_is_started_on_a_worker_served_and_stopped_when_idle(
    settings: ApiSettings, fakes: list[FakeInference]
) -> None:
    """On demand, as a worker drives it (worker.serving): the first request rings for a replica and is answered 503
    ``model_starting`` with Retry-After past the start wait; the worker claims it, reports it ready at its URL, the
    model is served there; idle past the timeout, the heartbeat's answer says stop; its time is the service's."""
    from sqlalchemy import select

    from api.db.models import UsageRecord
    from api.db.session import make_engine, make_sessionmaker
    from api.main import create_app

    on_demand = settings.model_copy(
        update={
            "inference_endpoints": {},
            "inference_on_demand": True,
            "inference_start_wait_seconds": 0.3,
            "inference_idle_seconds": 1.0,
        }
    )
    with TestClient(create_app(on_demand)) as client:
        rings = Rings()
        router(client).queue = rings  # type: ignore[assignment]
        t0 = time.monotonic()
        r = chat(client, TINY_ID)
        assert time.monotonic() - t0 < 5  # never a hang: the start wait, then an answer
        assert r.status_code == 503 and r.json()["error"]["code"] == "model_starting", r.text
        assert int(r.headers["retry-after"]) > 0 and len(rings.served) == 1
        replica = rings.served[0]
        assert replica in r.json()["error"]["message"]
        assert {m["id"]: m for m in client.get("/v1/models").json()["data"]}[TINY_ID]["serving"] == "starting"
        assert chat(client, TINY_ID).status_code == 503 and len(rings.served) == 1  # the same start, not another
        url = f"/internal/inference/replicas/{replica}"
        claim = client.post(f"{url}/claim", json={"worker_id": "w1", "claim_id": "c1"}, headers=WORKER)
        assert claim.status_code == 200 and claim.json()["base_model"] == TINY_ID, claim.text
        other = client.post(f"{url}/claim", json={"worker_id": "w2", "claim_id": "c2"}, headers=WORKER)
        assert other.status_code == 409 and other.json()["error"]["code"] == "stale_claim"
        report = {"claim_id": "c1", "device": "cpu", "device_name": "test"}
        starting = client.post(f"{url}/report", json=report | {"state": "starting"}, headers=WORKER)
        assert starting.json()["stop"] is False
        ready = client.post(f"{url}/report", json=report | {"state": "ready", "url": fakes[0].url}, headers=WORKER)
        assert ready.json() == {"stop": False, "reason": None}
        r = chat(client, TINY_ID)
        assert r.status_code == 200 and ("chat", TINY_ID) in fakes[0].calls, r.text
        cards = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
        assert cards[TINY_ID]["serving"] == "ready"
        (worker,) = client.get("/v1/admin/fleet", headers=ADMIN).json()["workers"]
        assert worker["worker_id"] == "w1" and worker["serving"] == [TINY_ID] and worker["tenants"] == 0
        time.sleep(1.2)  # idle past INFERENCE_IDLE_SECONDS
        beat = client.post(f"{url}/report", json=report | {"state": "ready", "url": fakes[0].url}, headers=WORKER)
        assert beat.json()["stop"] is True and "idle" in beat.json()["reason"]
        assert client.post(f"{url}/report", json=report | {"state": "stopped"}, headers=WORKER).json()["stop"]
        wrong = client.post(f"{url}/report", json={"claim_id": "c2", "state": "ready"}, headers=WORKER)
        assert wrong.status_code == 409
        time.sleep(REFRESH_SECONDS)  # what this API process knows of the replicas is that old at most
        r = chat(client, TINY_ID)  # stopped: the next request starts another
        assert r.json()["error"]["code"] == "model_starting" and len(rings.served) == 2
        # a worker that claims it and goes silent (killed) for longer than its lease: failed, and another is asked
        url = f"/internal/inference/replicas/{rings.served[1]}"
        assert (
            client.post(f"{url}/claim", json={"worker_id": "w3", "claim_id": "c3"}, headers=WORKER).status_code == 200
        )
        time.sleep(3.2)  # three heartbeats of 1 s
        assert chat(client, TINY_ID).json()["error"]["code"] == "model_starting" and len(rings.served) == 3
        late = client.post(
            f"{url}/report", json={"claim_id": "c3", "state": "ready", "url": fakes[0].url}, headers=WORKER
        )
        assert late.status_code == 409  # its replica is failed: the worker stops its server
    with make_sessionmaker(make_engine(on_demand.db_url))() as session:
        (row,) = session.scalars(select(UsageRecord).where(UsageRecord.kind == "serving")).all()
    assert row.project_id == "service" and row.subject_id == TINY_ID and row.device_kind == "cpu (test)"
    assert 1.0 < row.device_seconds < 30


def test_a_dns_endpoint_is_one_replica_per_address(settings: ApiSettings, fakes: list[FakeInference]) -> None:
    """``dns+http://name:port/v1`` (a headless Service): every address the name resolves to is a replica."""
    import asyncio

    from api.core.queue import JobQueue
    from api.db.session import make_engine, make_sessionmaker

    port = fakes[0].port
    dns = settings.model_copy(update={"inference_endpoints": {TINY_ID: [f"dns+http://localhost:{port}/v1"]}})
    fleet = Router(dns, dns.store(), make_sessionmaker(make_engine(dns.db_url)), JobQueue(dns))

    async def known() -> list[str]:
        await fleet.refresh(force=True)
        urls = sorted(r.url for r in fleet.of(TINY_ID))
        await fleet.aclose()
        return urls

    urls = asyncio.run(known())
    assert f"http://127.0.0.1:{port}/v1" in urls and all(u.endswith(f":{port}/v1") for u in urls), urls
