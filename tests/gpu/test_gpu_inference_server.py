"""The inference component on CUDA: ``python -m worker.inference_server`` (vLLM's OpenAI server) serving an adapter
that GRPO just trained on the GPU, loaded at run time as the API loads it, against the trainer's own log-probs of
the served tokens. tests/integration/test_inference.py runs the same server on vLLM's CPU build behind the API."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest
import torch

from grpo_core.hardware.device import release_device_memory, vllm_on_cuda
from grpo_core.models.catalog import SMOLLM2_ID
from grpo_core.policy import load_adapter, prompts_of
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from grpo_core.update.logprobs import completion_logprobs
from scripts.local_stack import Proc, free_port, wait_http
from tests.training import ROWS, DigitShare, Recorder

pytestmark = pytest.mark.skipif(not vllm_on_cuda(), reason="no CUDA build of vLLM here (docs/guides/gpu.md)")

BF16_MEAN = 0.05  # mean |served − trainer| log-prob per token, bf16 on both sides (tests/gpu/test_gpu_vllm.py)


def _complete(base: str, model: str, prompt_ids: list[int]) -> tuple[list[int], list[float]]:
    """Greedy completion of token ids, with each sampled token's id and log-prob."""
    body = {
        "model": model,
        "prompt": prompt_ids,
        "max_tokens": 24,
        "temperature": 0,
        "logprobs": 0,
        "return_tokens_as_token_ids": True,  # "token_id:123" instead of text pieces
    }
    r = httpx.post(f"{base}/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    lp = r.json()["choices"][0]["logprobs"]
    return [int(t.split(":", 1)[1]) for t in lp["tokens"]], [float(x) for x in lp["token_logprobs"]]


def test_the_server_serves_an_adapter_trained_on_the_gpu(smollm2_dir: Path, tmp_path: Path, logs_dir: Path) -> None:
    cfg = GRPOConfig.model_validate(
        {
            "device": "cuda",
            "group_size": 4,
            "batch_size": 2,
            "max_steps": 2,
            "max_completion_tokens": 16,
            "learning_rate": 5e-3,  # two steps that move the adapter visibly
            "rollout_engine": "merged",
        }
    )
    result = train(cfg, smollm2_dir, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=tmp_path / "w", seed=0)
    adapter = result.final_checkpoint
    assert adapter is not None and (adapter / "adapter_config.json").is_file()
    release_device_memory()  # the trainer's cached blocks: the server's vLLM measures what is free

    port = free_port()
    env = dict(os.environ, MODEL_CATALOG_DIR=str(smollm2_dir.parent), STATE_DIR=str(tmp_path / "state"))
    command = [sys.executable, "-m", "worker.inference_server", SMOLLM2_ID, "--port", str(port)]
    command += ["--max-model-len", "1024", "--", "--gpu-memory-utilization", "0.5"]
    server = Proc("inference-gpu", command, env, logs_dir)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_http(f"{base}/models", proc=server.popen, timeout=900)
        r = httpx.post(f"{base}/load_lora_adapter", json={"lora_name": "ft", "lora_path": str(adapter)}, timeout=120)
        assert r.status_code == 200, r.text
        models = {m["id"]: m for m in httpx.get(f"{base}/models", timeout=30).json()["data"]}
        assert models["ft"]["parent"] == SMOLLM2_ID

        policy, tok = load_adapter(smollm2_dir, adapter, GRPOConfig(device="cuda", precision="bf16"))
        prompt_ids = tok(prompts_of([{"prompt": "What is 12 + 30?"}], tok)[0], add_special_tokens=False)["input_ids"]
        tokens, served = _complete(base, "ft", prompt_ids)
        base_tokens, base_served = _complete(base, SMOLLM2_ID, prompt_ids)
        dev = next(policy.parameters()).device
        ids = torch.tensor([prompt_ids], device=dev)
        comp = torch.tensor([tokens], device=dev)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            want = completion_logprobs(policy, ids, torch.ones_like(ids), comp, torch.ones_like(comp), temperature=1.0)
            with policy.disable_adapter():
                base_want = completion_logprobs(
                    policy, ids, torch.ones_like(ids), comp, torch.ones_like(comp), temperature=1.0
                )
        near = float((torch.tensor(served) - want.float().cpu()[0]).abs().mean())
        far = float((torch.tensor(served) - base_want.float().cpu()[0]).abs().mean())
        print(f"\nserved adapter: |served - trainer| {near:.3f}, |served - base model| {far:.3f} per token")
        assert near < BF16_MEAN and near < far
        assert (tokens, served) != (base_tokens, base_served)  # the adapter, not the base model, answered
    finally:
        server.stop()
