"""`make demo`'s before/after measure, through the product: an eval (``/v1/evals``, OpenAI's shape) with the demo's
grader as its testing criterion, run on the held-out questions for the base model and for the fine-tuned model,
each run by the worker (greedy, as a user would compare two models)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

ITEM_SCHEMA = {"type": "object", "properties": {"prompt": {"type": "string"}, "answer": {"type": "string"}}}


def _ok(r: httpx.Response) -> dict[str, Any]:
    if r.status_code >= 400:
        raise RuntimeError(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text}")
    out: dict[str, Any] = r.json()
    return out


def before_after(
    base_url: str, headers: dict[str, str], grader_source: str, held_out: Path, models: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """The result counts of one run per model (label -> model name), all on the held-out file."""
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as api:
        lines = "".join(json.dumps({"item": json.loads(ln)}) + "\n" for ln in held_out.read_text().splitlines() if ln)
        f = _ok(api.post("/v1/files", data={"purpose": "evals"}, files={"file": ("held_out.jsonl", lines.encode())}))
        ev = _ok(
            api.post(
                "/v1/evals",
                json={
                    "name": "demo: held-out arithmetic",
                    "data_source_config": {"type": "custom", "item_schema": ITEM_SCHEMA},
                    "testing_criteria": [
                        {"type": "python", "name": "first_number", "source": grader_source, "pass_threshold": 1.0}
                    ],
                },
            )
        )
        runs = {}
        for label, model in models.items():
            data_source = {
                "type": "completions",
                "source": {"type": "file_id", "id": f["id"]},
                "input_messages": {"type": "template", "template": [{"role": "user", "content": "{{item.prompt}}"}]},
                "model": model,
                "sampling_params": {"temperature": 0, "max_completion_tokens": 24},
            }
            runs[label] = _ok(api.post(f"/v1/evals/{ev['id']}/runs", json={"name": label, "data_source": data_source}))
        done: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + 900
        while len(done) < len(runs) and time.monotonic() < deadline:
            for label, run in runs.items():
                if label not in done:
                    got = _ok(api.get(f"/v1/evals/{ev['id']}/runs/{run['id']}"))
                    if got["status"] in ("completed", "failed", "canceled"):
                        done[label] = got
            time.sleep(1)
        if len(done) < len(runs):
            raise RuntimeError("the eval runs did not finish within 15 minutes")
        return done
