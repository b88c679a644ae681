"""The user's whole path through the generated client (rft_client) only, and the ``rft`` command as a process.

Real processes on the embedded defaults (SQLite, filesystem broker, local object store): uvicorn and a Celery
worker training the tiny model. Upload, create, follow until done, download the adapter and load it with peft —
no hand-written HTTP anywhere, so a generated client that cannot do the job fails here.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rft_client import Client
from rft_client.api.files import create_file
from rft_client.api.fine_tuning import create_job, download_checkpoint, list_checkpoints, list_events, retrieve_job
from rft_client.models import (
    BodyCreateFile,
    Checkpoint,
    FileObject,
    Job,
    JobCreate,
    ListResponseCheckpoint,
    ListResponseJobEvent,
    StepMetrics,
)
from rft_client.types import File

from scripts.local_stack import BIN
from tests.helpers import ARITH_ROWS, job_body, jsonl, migrate
from tests.integration.stack import Stack
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def stack(catalog_dir: Path, tmp_path_factory: pytest.TempPathFactory, logs_dir: Path) -> Iterator[Stack]:
    state = tmp_path_factory.mktemp("client-e2e-state")
    migrate(f"sqlite:///{state.resolve() / 'rft.db'}")
    s = Stack({"STATE_DIR": str(state), "MODEL_CATALOG_DIR": str(catalog_dir)}, logs_dir)
    try:
        s.start_api()
        s.start_worker()
        yield s
    finally:
        s.stop()


def wait_done(client: Client, job_id: str, timeout: float, stack: Stack) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = retrieve_job.sync(job_id, client=client)
        assert isinstance(job, Job)
        if job.status in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.5)
    raise AssertionError(f"{job_id} did not finish within {timeout}s\n{stack.logs()}")


def test_generated_client_drives_the_whole_flow(stack: Stack, tiny_model_dir: Path, tmp_path: Path) -> None:
    client = Client(base_url=stack.url)
    payload = File(payload=io.BytesIO(jsonl(ARITH_ROWS)), file_name="arith.jsonl")
    upload = BodyCreateFile(file=payload, purpose="fine-tune")
    f = create_file.sync(client=client, body=upload)
    assert isinstance(f, FileObject) and f.row_count == len(ARITH_ROWS) and f.filename == "arith.jsonl"

    body = job_body(TINY_ID, f.id) | {"validation_file": f.id}
    created = create_job.sync(client=client, body=JobCreate.from_dict(body))
    assert isinstance(created, Job) and created.status == "queued" and created.total_steps == 3

    job = wait_done(client, created.id, 300, stack)
    assert job.status == "succeeded", (job.error, stack.logs())
    assert job.steps_done == 3 and job.fine_tuned_model

    events = list_events.sync(job.id, client=client, limit=100)
    assert isinstance(events, ListResponseJobEvent)
    metrics = [e.data for e in events.data if e.type_ == "metrics"]
    assert all(isinstance(m, StepMetrics) for m in metrics)  # the metrics event's data is typed in the spec
    assert sorted(m.step for m in metrics if isinstance(m, StepMetrics)) == [1, 2, 3]
    assert all(m.scores.graders[0].name == "has_digit" for m in metrics if isinstance(m, StepMetrics))
    assert events.data[0].message == "The job has successfully completed"

    ckpts = list_checkpoints.sync(job.id, client=client)
    assert isinstance(ckpts, ListResponseCheckpoint)
    latest = ckpts.data[0]
    assert isinstance(latest, Checkpoint) and latest.step_number == 3
    resp = download_checkpoint.sync_detailed(job.id, latest.id, client=client)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/x-tar"
    out = tmp_path / "adapter"
    with tarfile.open(fileobj=io.BytesIO(resp.content)) as tar:
        assert sorted(tar.getnames()) == ["adapter_config.json", "adapter_model.safetensors"]
        tar.extractall(out, filter="data")

    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), out)
    lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert lora_b and any(float(p.abs().sum()) > 0 for p in lora_b), "the adapter was never trained"


def rft(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    env = {**os.environ, "RFT_BASE_URL": stack.url}
    env.pop("RFT_API_KEY", None)
    return subprocess.run([str(BIN / "rft"), *args], env=env, capture_output=True, text=True, timeout=60)


def test_rft_command_smoke(stack: Stack, tmp_path: Path) -> None:
    data = tmp_path / "train.jsonl"
    data.write_bytes(jsonl(ARITH_ROWS))
    up = rft(stack, "files", "upload", str(data), "--json")
    assert up.returncode == 0, up.stderr
    assert json.loads(up.stdout)["row_count"] == len(ARITH_ROWS)

    listed = rft(stack, "jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["object"] == "list"
    assert rft(stack, "jobs", "list").returncode == 0

    missing = rft(stack, "jobs", "get", "ftjob-missing")
    assert missing.returncode == 1 and missing.stderr.startswith("error: 404 not_found_error")
    assert "Traceback" not in missing.stderr
