"""A job's trained adapter, downloaded through the API, and the same job trained alone in this process: what the
integration tests compare bit for bit (fp32) to show a pooled, paused or resumed job trains as if alone."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import httpx
import torch
from pydantic import TypeAdapter
from safetensors.torch import load_file

from tests.helpers import ARITH_ROWS


def adapter_of(api: httpx.Client, job_id: str, out: Path) -> dict[str, torch.Tensor]:
    ckpts = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"]
    resp = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints/{ckpts[0]['id']}/content")
    if resp.status_code == 302:
        resp = httpx.get(resp.headers["location"], timeout=30)
    assert resp.status_code == 200, resp.text
    with tarfile.open(fileobj=io.BytesIO(resp.content)) as tar:
        tar.extractall(out, filter="data")
    return load_file(str(out / "adapter_model.safetensors"))


def trained_alone(job: dict[str, Any], tiny_model_dir: Path, work: Path) -> dict[str, torch.Tensor]:
    """The same job (its resolved hyperparameters, grader, rows and seed) trained alone in this process."""
    from grpo_core.rewards.graders import build_graders
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.schemas.graders import GraderSpec
    from grpo_core.trainer import train
    from tests.training import Recorder
    from worker.settings import WorkerSettings

    rl = job["method"]["reinforcement"]
    cfg = GRPOConfig.model_validate(rl["hyperparameters"])
    graders = build_graders(TypeAdapter(GraderSpec).validate_python(rl["grader"]), WorkerSettings().grader_env())
    try:
        result = train(cfg, tiny_model_dir, ARITH_ROWS, graders, callbacks=Recorder(), work_dir=work, seed=job["seed"])
    finally:
        for g in graders:
            g.close()
    assert result.final_checkpoint is not None
    return load_file(str(result.final_checkpoint / "adapter_model.safetensors"))
