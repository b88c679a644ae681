"""Experiment tracking on real services: a job with OpenAI's ``integrations: [{type: wandb}]`` on a worker that has
no W&B key (offline mode: the run's files, read back record by record) and an operator's MLflow tracking URI (a
local file store, read back with MLflow's client): the config, every step's metrics, the adapter's location."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.integration.stack import Stack, production_env, running_api, wait_status
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def wandb_records(path: Path) -> list[Any]:
    """The records of an offline W&B run file: LevelDB-log framing (32 KiB blocks of checksum, length, type and
    data chunks) after a 7-byte header, each record a ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, block, records, pending = 7, 32768, [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind == 0 and length == 0:
            break
        if kind in (1, 4):  # full, or last chunk
            rec = pb.Record()
            rec.ParseFromString(pending + chunk)
            records.append(rec)
            pending = b""
        else:  # first or middle chunk
            pending += chunk
    return records


def _key(item: Any) -> str:
    return str(item.key or "/".join(item.nested_key))


@pytest.fixture(scope="module")
def tracked_stack(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Stack, Path]]:
    state = tmp_path_factory.mktemp("tracked")
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, state)
        env |= {"MLFLOW_TRACKING_URI": f"file://{state / 'mlruns'}", "MLFLOW_ALLOW_FILE_STORE": "true"}
        with running_api(env, logs_dir) as stack:
            stack.start_worker()
            yield stack, state


def test_a_job_mirrors_its_config_metrics_and_adapter_to_wandb_offline_and_mlflow(
    tracked_stack: tuple[Stack, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, state = tracked_stack
    wandb = {"project": "rft-tests", "name": "tracked", "tags": ["ci"]}
    with httpx.Client(base_url=stack.url, timeout=30) as api:
        f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("a.jsonl", jsonl(ARITH_ROWS))})
        body = job_body(TINY_ID, f.json()["id"]) | {"integrations": [{"type": "wandb", "wandb": wandb}]}
        created = api.post("/v1/fine_tuning/jobs", json=body)
        assert created.status_code == 201, created.text
        assert created.json()["integrations"] == [{"type": "wandb", "wandb": wandb | {"entity": None}}]
        job = wait_status(api, created.json()["id"], {"succeeded", "failed", "cancelled"}, 300, stack)
        assert job["status"] == "succeeded", job
        messages = [e["message"] for e in api.get(f"/v1/fine_tuning/jobs/{job['id']}/events?limit=100").json()["data"]]
        final_key = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"][0]
    assert any(m.startswith("Logging to Weights & Biases: run ") and "offline" in m for m in messages), messages
    assert any(m.startswith("Logging to MLflow: run ") for m in messages)
    assert not any("tracking stopped" in m for m in messages)

    (run_file,) = (state / "wandb").glob("wandb/offline-run-*/run-*.wandb")
    records = wandb_records(run_file)
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert (run.project, run.display_name, list(run.tags)) == ("rft-tests", "tracked", ["ci"])
    config = {u.key: u.value_json for u in run.config.update}
    assert config["job_id"] == f'"{job["id"]}"' and '"group_size":4' in config["hyperparameters"]
    history = [
        {_key(i): i.value_json for i in r.history.item} for r in records if r.WhichOneof("record_type") == "history"
    ]
    assert [h["_step"] for h in history] == ["1", "2", "3"]
    assert all("loss" in h and "scores/train_reward_mean" in h for h in history)
    summary = {
        _key(i): i.value_json for r in records if r.WhichOneof("record_type") == "summary" for i in r.summary.update
    }
    assert summary["adapter_step"] == "3" and summary["status"] == '"succeeded"'
    assert summary["adapter_object_key"].strip('"').endswith(".tar")

    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps file stores behind this switch
    client = MlflowClient(f"file://{state / 'mlruns'}")
    (exp,) = [e for e in client.search_experiments() if e.name == "rft"]
    (mlrun,) = client.search_runs([exp.experiment_id])
    assert mlrun.info.run_name == f"{job['id']}-e1" and mlrun.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(mlrun.info.run_id, "loss")] == [1, 2, 3]
    assert mlrun.data.params["hyperparameters.group_size"] == "4" and mlrun.data.params["model"] == TINY_ID
    assert mlrun.data.tags["rft.adapter_step"] == "3" and mlrun.data.tags["rft.job_id"] == job["id"]
    assert final_key["step_number"] == 3
