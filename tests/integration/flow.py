"""The user's path through the public API, shared by the services test and the embedded-defaults test."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import httpx

from tests.helpers import ARITH_ROWS, job_body, jsonl
from tests.tiny_model import TINY_ID


def submit(
    api: httpx.Client, *, validation: bool = False, grader: dict[str, Any] | None = None, **hp: Any
) -> dict[str, Any]:
    f = api.post("/v1/files", data={"purpose": "fine-tune"}, files={"file": ("arith.jsonl", jsonl(ARITH_ROWS))})
    assert f.status_code == 201, f.text
    body = job_body(TINY_ID, f.json()["id"], grader=grader, **hp)
    if validation:
        body["validation_file"] = f.json()["id"]
    r = api.post("/v1/fine_tuning/jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def all_events(api: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    """Every event, oldest first, following the ``after`` cursor."""
    out: list[dict[str, Any]] = []
    after = None
    while True:
        page = api.get(f"/v1/fine_tuning/jobs/{job_id}/events", params={"limit": 7, "after": after}).json()
        out += page["data"]
        if not page["has_more"]:
            return out[::-1]
        after = page["data"][-1]["id"]


def check_succeeded_job(
    api: httpx.Client, job: dict[str, Any], tiny_model_dir: Path, tmp_path: Path, *, on_cpu: bool = True
) -> list[str]:
    """Events, checkpoints and the downloaded adapter of a finished 3-step job; returns the checkpoint keys.
    ``on_cpu``: also what a CPU worker resolves and says (a GPU test checks its own device instead)."""
    assert job["status"] == "succeeded", job
    assert job["fine_tuned_model"] and job["steps_done"] == 3 and job["trained_tokens"] > 0
    events = all_events(api, job["id"])
    metrics = [e for e in events if e["type"] == "metrics"]
    assert [e["data"]["step"] for e in metrics] == [1, 2, 3]
    if job["validation_file"]:  # scored after the last step (eval_interval 0)
        assert [e["data"]["step"] for e in metrics if e["data"]["scores"]["valid_reward_mean"] is not None] == [3]
        assert 0.0 <= metrics[-1]["data"]["scores"]["valid_reward_mean"] <= 1.0
    for e in metrics:
        scores = e["data"]["scores"]
        assert 0.0 <= scores["train_reward_mean"] <= 1.0
        assert scores["graders"][0]["name"] == "has_digit"
        assert set(e["data"]["timing"]["step"]) >= {"sampling", "scoring", "training"}
    messages = [e["message"] for e in events]
    assert any(m.startswith("Fine-tuning job started") for m in messages)
    assert all(e["data"]["memory"]["peak_allocated_gb"] > 0 for e in metrics)
    if on_cpu:
        # the worker's first event names where it trains; the job object keeps what `auto` resolved to
        ex = job["execution"]
        assert ex["device"] == "cpu" and ex["rollout_engine"] == "merged" and ex["micro_batch_size"] == 8, ex
        started = messages.index(next(m for m in messages if m.startswith("Fine-tuning job started")))
        where = f"CPU, {ex['threads']} threads, {ex['precision']} ({ex['precision_reason']})"
        assert messages[started + 1].startswith(f"Training {job['model']} with GRPO on {where}:"), messages
        assert ex["packing"] and ex["fused_lm_head"] and ex["max_tokens_per_micro_batch"] > 0, ex
        batches = f"packed micro-batches of up to {ex['max_tokens_per_micro_batch']} tokens"
        assert f"Training on {where}: {batches}, LM head fused with the log-prob" in " ".join(messages)
        assert any(m.startswith("Python graders run in the bwrap sandbox") for m in messages)  # the boot self-test
    assert messages[-1] == "The job has successfully completed"

    ckpts = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert [c["step_number"] for c in ckpts] == [3, 2]
    resp = api.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints/{ckpts[0]['id']}/content")
    if resp.status_code == 302:  # S3: a presigned URL, fetched as a user would, with no credentials of ours
        assert "X-Amz-Expires=300" in resp.headers["location"]
        resp = httpx.get(resp.headers["location"], timeout=30)
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
    return [c["id"] for c in ckpts]
