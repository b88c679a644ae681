"""One job on many devices and nodes, the API's side: ``resources`` on the job (limits, the batch split), the
claim carrying it, and a multi-node attempt's rendezvous and joins through the internal API (fenced, idempotent,
race-safe). The doorbells are read back from the real (filesystem) broker; the ``rft`` CLI's flags at the end.
"""

from __future__ import annotations

import base64
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rft_client import Client
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session
from typer.testing import CliRunner, Result

from api.core.errors import Conflict
from api.core.settings import ApiSettings
from api.db import models as db
from api.db.session import make_engine, make_sessionmaker
from api.jobs import rendezvous
from rft_cli import api as cli_api
from rft_cli.main import app as rft_app
from runtime.queue import GPU_QUEUE, JOIN_JOB, RUN_JOB
from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID

AUTH = {"Authorization": "Bearer t0k"}
HP = "method.reinforcement.hyperparameters"
ENDPOINT = "10.0.0.5:29400"
EXACT = {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}", "reference": "{{item.answer}}"}
BASE = {"reaper": False, "webhook_dispatcher": False, "max_devices_per_node": 4, "max_nodes": 3}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return BASE


def body(file_id: str, resources: dict[str, Any] | None = None, **hp: Any) -> dict[str, Any]:
    b = job_body(TINY_ID, file_id, **({"batch_size": 8} | hp))
    b["method"]["reinforcement"]["grader"] = EXACT | {"operation": "eq"}
    return b if resources is None else b | {"resources": resources}


def upload(client: TestClient) -> str:
    r = client.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))})
    return str(r.json()["id"])


def sent(settings: ApiSettings) -> list[tuple[str, list[Any]]]:
    """(task, args) of every message on the gpu queue of the filesystem broker."""
    out = []
    for path in sorted((settings.state_dir / "broker").glob(f"*.{GPU_QUEUE}.msg")):
        msg = json.loads(path.read_text())
        out.append((msg["headers"]["task"], json.loads(base64.b64decode(msg["body"]))[0]))
    return out


def joins(settings: ApiSettings) -> list[list[Any]]:
    return [args for task, args in sent(settings) if task == JOIN_JOB]


class MultiNodeJob:
    """A job with ``resources``, seen from the user's API and from its workers' internal API."""

    def __init__(self, client: TestClient, settings: ApiSettings, devices: int = 2, nodes: int = 3) -> None:
        self.c, self.settings = client, settings
        r = client.post("/v1/fine_tuning/jobs", json=body(upload(client), {"devices": devices, "nodes": nodes}))
        assert r.status_code == 201, r.text
        self.id = r.json()["id"]
        self.url = f"/internal/jobs/{self.id}"

    def claim(self, claim_id: str = "claim-0001") -> Any:
        return self.c.post(f"{self.url}/claim", json={"worker_id": "w0", "claim_id": claim_id}, headers=AUTH)

    def publish(self, epoch: int, endpoint: str = ENDPOINT) -> Any:
        return self.c.post(f"{self.url}/rendezvous", json={"epoch": epoch, "endpoint": endpoint}, headers=AUTH)

    def join(self, epoch: int, worker_id: str) -> Any:
        return self.c.post(f"{self.url}/join", json={"epoch": epoch, "worker_id": worker_id}, headers=AUTH)

    def sql(self, statement: str) -> list[Any]:
        with create_engine(self.settings.db_url).begin() as conn:
            result = conn.execute(text(statement), {"id": self.id})
            return list(result) if result.returns_rows else []

    def nodes_joined(self) -> list[str] | None:
        with Session(create_engine(self.settings.db_url)) as session:
            row = session.get(db.Job, self.id)
            assert row is not None
            return row.rendezvous_nodes

    def messages(self) -> list[str]:
        return [e["message"] for e in self.c.get(f"/v1/fine_tuning/jobs/{self.id}/events?limit=100").json()["data"]]


def not_claimable(r: Any) -> None:
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_claimable", r.text


def test_resources_default_to_one_device_on_one_node(client: TestClient, settings: ApiSettings) -> None:
    job = client.post("/v1/fine_tuning/jobs", json=body(upload(client))).json()
    assert job["resources"] == {"devices": 1, "nodes": 1, "rollout_devices": 0}
    url = f"/internal/jobs/{job['id']}/claim"
    assert client.post(url, json={"worker_id": "w", "claim_id": "claim-0001"}, headers=AUTH).json()["resources"] == {
        "devices": 1,
        "nodes": 1,
        "rollout_devices": 0,
    }
    with create_engine(settings.db_url).begin() as conn:  # a row from before the column existed
        conn.execute(text("update jobs set resources = null where id = :id"), {"id": job["id"]})
    assert client.get(f"/v1/fine_tuning/jobs/{job['id']}").json()["resources"] == {
        "devices": 1,
        "nodes": 1,
        "rollout_devices": 0,
    }


@pytest.mark.parametrize(
    ("resources", "param", "needles"),
    [
        ({"devices": 5}, "resources.devices", ["at most 4 devices per node", "(MAX_DEVICES_PER_NODE)"]),
        ({"nodes": 4, "devices": 1}, "resources.nodes", ["at most 3 nodes per job", "(MAX_NODES)"]),
        ({"devices": 0}, "resources.devices", ["greater than or equal to 1"]),
        ({"nodes": 65}, "resources.nodes", ["less than or equal to 64"]),
        ({"gpus": 2}, "resources.gpus", ["Extra inputs are not permitted"]),
    ],
)
def test_resources_beyond_this_service_or_out_of_range_are_422_naming_the_field(
    client: TestClient, resources: dict[str, Any], param: str, needles: list[str]
) -> None:
    r = client.post("/v1/fine_tuning/jobs", json=body(upload(client), resources))
    err = r.json()["error"]
    assert r.status_code == 422 and err["type"] == "invalid_request_error" and err["param"] == param, r.text
    assert all(n in err["message"] for n in needles), err["message"]


def test_batch_size_must_give_every_rank_a_prompt(client: TestClient) -> None:
    fid = upload(client)
    r = client.post("/v1/fine_tuning/jobs", json=body(fid, {"devices": 4, "nodes": 2}, batch_size=7))
    err = r.json()["error"]
    assert r.status_code == 422 and err["param"] == f"{HP}.batch_size", r.text
    assert "batch_size=7 is smaller than the job's 8 ranks" in err["message"]
    assert "every rank needs at least one prompt per step" in err["message"]
    ok = client.post("/v1/fine_tuning/jobs", json=body(fid, {"devices": 4, "nodes": 2}, batch_size=8))
    assert ok.status_code == 201 and ok.json()["resources"] == {"devices": 4, "nodes": 2, "rollout_devices": 0}


def test_asynchronous_grpo_on_several_ranks_is_422_naming_max_staleness(client: TestClient) -> None:
    fid = upload(client)
    r = client.post("/v1/fine_tuning/jobs", json=body(fid, {"devices": 2}, max_staleness=1))
    err = r.json()["error"]
    assert r.status_code == 422 and err["param"] == f"{HP}.max_staleness", r.text
    assert "max_staleness=1 samples beside one training process" in err["message"]
    ok = client.post("/v1/fine_tuning/jobs", json=body(fid, {"devices": 1}, max_staleness=1))
    assert ok.status_code == 201, ok.text
    assert ok.json()["method"]["reinforcement"]["hyperparameters"]["max_staleness"] == 1


@pytest.mark.parametrize(
    ("resources", "hp", "param", "needles"),
    [
        (
            {"devices": 2, "rollout_devices": 1},
            {},
            "resources.rollout_devices",
            ["needs", "max_staleness of at least 1"],
        ),
        (
            {"devices": 2, "rollout_devices": 2},
            {"max_staleness": 1},
            "resources.rollout_devices",
            ["set rollout_devices 1"],
        ),
        (
            {"devices": 1, "rollout_devices": 1},
            {"max_staleness": 1},
            "resources.rollout_devices",
            ["leaves 0 devices to train", "set resources.devices 2"],
        ),
        (
            {"devices": 4, "rollout_devices": 2},
            {"max_staleness": 1},
            "resources.rollout_devices",
            ["set rollout_devices 1"],
        ),
        (
            {"devices": 2, "rollout_devices": 1, "nodes": 2},
            {"max_staleness": 1},
            "resources.rollout_devices",
            ["train on one node"],
        ),
        (
            {"devices": 3, "rollout_devices": 1},
            {"max_staleness": 1},
            "resources.rollout_devices",
            ["leaves 2 devices to train", "set resources.devices 2"],
        ),
        ({"devices": 2, "rollout_devices": -1}, {"max_staleness": 1}, "resources.rollout_devices", ["greater than"]),
    ],
)
def test_rollout_devices_it_cannot_honour_are_422_naming_the_field(
    client: TestClient, resources: dict[str, Any], hp: dict[str, Any], param: str, needles: list[str]
) -> None:
    r = client.post("/v1/fine_tuning/jobs", json=body(upload(client), resources, **hp))
    err = r.json()["error"]
    assert r.status_code == 422 and err["param"] == param, r.text
    assert all(n in err["message"] for n in needles), err["message"]


def test_a_sampler_on_a_device_of_its_own_is_one_training_rank(client: TestClient, settings: ApiSettings) -> None:
    resources = {"devices": 2, "nodes": 1, "rollout_devices": 1}
    job = client.post("/v1/fine_tuning/jobs", json=body(upload(client), resources, max_staleness=1)).json()
    assert job["resources"] == resources
    url = f"/internal/jobs/{job['id']}/claim"
    claim = client.post(url, json={"worker_id": "w", "claim_id": "claim-0002"}, headers=AUTH).json()
    assert claim["resources"] == resources  # the worker trains on one process: world size (2 - 1) × 1


@pytest.mark.parametrize("settings_overrides", [BASE | {"cap_batch_size": 2}])
def test_batch_size_is_checked_after_this_services_cap(client: TestClient) -> None:
    r = client.post("/v1/fine_tuning/jobs", json=body(upload(client), {"devices": 4}, batch_size=8))
    err = r.json()["error"]
    assert r.status_code == 422 and err["param"] == f"{HP}.batch_size", r.text
    assert "batch_size=2 (this service caps it at 2: CAP_BATCH_SIZE)" in err["message"]


def test_the_claim_carries_resources_and_the_rendezvous_calls_the_other_nodes(
    client: TestClient, settings: ApiSettings
) -> None:
    job = MultiNodeJob(client, settings)
    assert client.get(f"/v1/fine_tuning/jobs/{job.id}").json()["resources"] == {
        "devices": 2,
        "nodes": 3,
        "rollout_devices": 0,
    }
    claim = job.claim().json()
    assert (claim["epoch"], claim["resources"]) == (1, {"devices": 2, "nodes": 3, "rollout_devices": 0})
    stale = job.publish(0)
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "stale_lease"
    assert joins(settings) == []
    r = job.publish(1)
    assert r.status_code == 200, r.text
    beat = r.json()
    assert beat["status"] == "running" and beat["stop"] is None and beat["lease_expires_at"] > time.time()
    assert joins(settings) == [[job.id, 1], [job.id, 1]]  # nodes - 1, on the gpu queue
    assert [task for task, _ in sent(settings)] == [RUN_JOB, JOIN_JOB, JOIN_JOB]
    assert "Waiting for 2 more nodes to join the job's rendezvous" in job.messages()
    assert job.join(1, "w1").json()["node_rank"] == 1
    assert job.publish(1).status_code == 200  # a retry rings again only for the node still missing
    assert (
        len(joins(settings)) == 3 and job.messages().count("Waiting for 2 more nodes to join the job's rendezvous") == 1
    )
    moved = job.publish(1, "10.0.0.6:29400")
    assert moved.status_code == 409 and moved.json()["error"]["code"] == "rendezvous_published"


def test_join_hands_out_node_ranks_in_order_once_per_worker(client: TestClient, settings: ApiSettings) -> None:
    job = MultiNodeJob(client, settings)
    claim = job.claim().json()
    not_claimable(job.join(1, "w1"))  # nothing published yet
    job.publish(1)
    first = job.join(1, "w1").json()
    assert (first["node_rank"], first["endpoint"]) == (1, ENDPOINT)
    spec = {k: v for k, v in first["job"].items() if k != "lease_expires_at"}  # the rendezvous renewed the lease
    assert spec == {k: v for k, v in claim.items() if k != "lease_expires_at"}
    assert job.join(1, "w2").json()["node_rank"] == 2
    assert job.join(1, "w1").json()["node_rank"] == 1  # a retried join gets its rank back
    not_claimable(job.join(1, "w3"))  # nodes - 1 have joined
    not_claimable(job.join(0, "w4"))  # an older attempt's doorbell
    assert "Node 1 of 3 joined (worker w1)" in job.messages() and "Node 2 of 3 joined (worker w2)" in job.messages()
    assert job.nodes_joined() == ["w1", "w2"]
    client.post(f"/v1/fine_tuning/jobs/{job.id}/cancel")  # cancelling: still the attempt's, joins allowed
    assert job.join(1, "w2").json()["node_rank"] == 2
    client.post(f"{job.url}/finish", json={"epoch": 1, "status": "cancelled"}, headers=AUTH)
    not_claimable(job.join(1, "w2"))  # the attempt is over


def test_a_one_node_job_has_no_rendezvous(client: TestClient, settings: ApiSettings) -> None:
    job = MultiNodeJob(client, settings, devices=2, nodes=1)
    job.claim()
    r = job.publish(1)
    assert r.status_code == 409 and r.json()["error"]["code"] == "single_node", r.text
    not_claimable(job.join(1, "w1"))
    assert joins(settings) == []


def test_a_new_claim_starts_a_new_rendezvous(client: TestClient, settings: ApiSettings) -> None:
    job = MultiNodeJob(client, settings, nodes=2)
    job.claim()
    job.publish(1)
    assert job.join(1, "w1").json()["node_rank"] == 1
    job.sql("update jobs set lease_expires_at = 0 where id = :id")  # node 0 is presumed dead
    assert job.claim("claim-0002").json()["epoch"] == 2
    assert job.sql("select rendezvous_endpoint, rendezvous_nodes from jobs where id = :id") == [(None, None)]
    not_claimable(job.join(2, "w1"))  # the new attempt has not published yet
    not_claimable(job.join(1, "w1"))  # the old one is over, even for a worker that had joined it
    assert job.publish(2, "10.0.0.7:29400").status_code == 200
    assert joins(settings)[-1] == [job.id, 2]
    again = job.join(2, "w9").json()
    assert (again["node_rank"], again["endpoint"], again["job"]["epoch"]) == (1, "10.0.0.7:29400", 2)


def test_concurrent_joins_each_get_a_distinct_rank(client: TestClient, settings: ApiSettings) -> None:
    """Eight workers race for the four places of a five-node attempt: ranks 1-4 once each, the rest refused."""
    job = MultiNodeJob(client, settings, devices=1, nodes=3)
    job.sql('update jobs set resources = \'{"devices": 1, "nodes": 5}\' where id = :id')  # past MAX_NODES
    job.claim()
    job.publish(1)
    sessions = make_sessionmaker(make_engine(settings.db_url))

    def attempt(worker: str) -> int | None:
        with sessions() as session:
            try:
                return rendezvous.join(session, settings, job.id, 1, worker).node_rank
            except Conflict as exc:
                assert exc.code == "not_claimable"
                return None

    workers = [f"w{i}" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        ranks = dict(zip(workers, pool.map(attempt, workers), strict=True))
    placed = {rank: worker for worker, rank in ranks.items() if rank is not None}
    assert sorted(placed) == [1, 2, 3, 4] and list(ranks.values()).count(None) == 4  # no rank handed out twice
    assert job.nodes_joined() == [placed[rank] for rank in (1, 2, 3, 4)]  # the list is in node-rank order


def test_rft_jobs_create_devices_and_nodes(client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(
        cli_api, "make_client", lambda config: Client(base_url=str(client.base_url)).set_httpx_client(client)
    )
    monkeypatch.setattr(cli_api.Config, "close", lambda self: None)
    grader = tmp_path / "exact.json"
    grader.write_text(json.dumps(EXACT | {"operation": "eq"}))

    def rft(*args: str) -> Result:
        env = {"RFT_BASE_URL": "http://testserver", "RFT_API_KEY": ""}
        return CliRunner().invoke(rft_app, list(args), env=env)

    base = ["jobs", "create", "--model", TINY_ID, "--training-file", upload(client), "--grader", str(grader)]
    base += ["--hp", "batch_size=4", "--hp", "max_steps=2"]
    made = rft(*base, "--devices", "2", "--nodes", "2", "--json")
    assert made.exit_code == 0, made.stderr
    job = json.loads(made.stdout)
    assert job["resources"] == {"devices": 2, "nodes": 2, "rollout_devices": 0}
    assert "2 devices × 2 nodes" in rft("jobs", "get", job["id"]).stdout
    split = rft(*base, "--hp", "max_staleness=1", "--devices", "2", "--rollout-devices", "1", "--json")
    assert split.exit_code == 0, split.stderr
    split_job = json.loads(split.stdout)
    assert split_job["resources"] == {"devices": 2, "nodes": 1, "rollout_devices": 1}
    assert "2 devices × 1 node, 1 of them the sampler's" in rft("jobs", "get", split_job["id"]).stdout
    too_many = rft(*base, "--devices", "8")
    assert too_many.exit_code == 1 and "422" in too_many.stderr and "[param: resources.devices]" in too_many.stderr
    assert rft(*base, "--nodes", "0").exit_code == 2  # typer refuses it before any request
