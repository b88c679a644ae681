"""``rft chat`` against the app with the fake inference server behind it, ``rft adapters merge`` on the tiny model,
and what a trained adapter names as its base model (``adapter_config.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from grpo_core.models.catalog import base_model_name
from grpo_core.policy import load_policy
from grpo_core.schemas.config import GRPOConfig
from tests.fake_inference import FakeInference
from tests.tiny_model import TINY_ID
from tests.unit.test_cli import Rft, failed, ok
from tests.unit.test_cli import rft as rft
from tests.unit.test_inference import fake as fake
from tests.unit.test_inference import trained_job


@pytest.fixture
def settings_overrides(fake: FakeInference) -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "inference_base_url": fake.url, "rate_limit_per_minute": 0}


def test_chat_streams_one_answer(rft: Rft, client: TestClient, settings: ApiSettings, fake: FakeInference) -> None:
    name = trained_job(client, settings)["job"]["fine_tuned_model"]
    out = ok(rft("chat", name, "What is 2 + 3?", "--temperature", "0", "--seed", "1")).stdout
    assert out.startswith("answer from ftckpt-") and out.endswith("\n")
    assert ("chat", TINY_ID) not in fake.calls  # the fine-tuned model, not the base


def test_chat_without_a_prompt_is_a_conversation(rft: Rft, fake: FakeInference) -> None:
    from typer.testing import CliRunner

    from rft_cli.main import app

    result = CliRunner().invoke(
        app, ["chat", TINY_ID], input="hello\nand again\n\n", env={"RFT_BASE_URL": "http://testserver"}
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout.count(f"answer from {TINY_ID}") == 2


def test_chat_with_an_unknown_model_is_one_clean_line(rft: Rft) -> None:
    failed(rft("chat", "ft:nope:rft:ftjob-0000", "hi"), "404", "model_not_found", "does not exist")


def _tiny_adapter(tiny_model_dir: Path, out: Path) -> None:
    cfg = GRPOConfig.model_validate({"lora": {"rank": 4, "alpha": 8}, "precision": "fp32", "device": "cpu"})
    model, _ = load_policy(tiny_model_dir, cfg, seed=0, fused_lora=False)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    model.save_pretrained(out, save_embedding_layers=False)


def test_an_adapter_names_the_catalog_model_not_the_workers_path(tiny_model_dir: Path, tmp_path: Path) -> None:
    _tiny_adapter(tiny_model_dir, tmp_path / "a")
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == TINY_ID
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "rft_model.json").write_text(json.dumps({"hub_id": "org/tiny"}))
    assert base_model_name(tmp_path / "m") == "org/tiny"
    (tmp_path / "m" / "rft_model.json").write_text("not json")
    assert base_model_name(tmp_path / "m") == "m"


def test_merge_gives_the_same_logits_as_base_plus_adapter(
    rft: Rft,
    tiny_model_dir: Path,
    catalog_dir: Path,
    tmp_path: Path,
) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    _tiny_adapter(tiny_model_dir, tmp_path / "adapter")
    # the base found from adapter_config.json's catalog id in --catalog
    out = ok(
        rft("adapters", "merge", str(tmp_path / "adapter"), "--catalog", str(catalog_dir), "-o", str(tmp_path / "m"))
    )
    assert "model.safetensors" in out.stdout and not (tmp_path / "m" / "adapter_config.json").exists()
    ids = torch.tensor([[1, 5, 9, 3, 7]])
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
        plain = base(ids).logits
        want = PeftModel.from_pretrained(base, str(tmp_path / "adapter")).eval()(ids).logits
        got = AutoModelForCausalLM.from_pretrained(tmp_path / "m", dtype=torch.float32).eval()(ids).logits
    assert (want - plain).abs().max() > 1e-3  # the adapter changes the output
    assert torch.allclose(got, want, atol=1e-5)
    # refusals: an existing output, a folder that is not an adapter
    failed(
        rft("adapters", "merge", str(tmp_path / "adapter"), "--catalog", str(catalog_dir), "-o", str(tmp_path / "m")),
        "not empty",
    )
    failed(rft("adapters", "merge", str(tmp_path), "-o", str(tmp_path / "m2")), "not a PEFT adapter")


def test_the_inference_server_command_is_vllm_serve_with_run_time_lora(tmp_path: Path) -> None:
    from worker.inference_server import command, environment, parse

    args, passthrough = parse([TINY_ID, "--port", "9001", "--max-cpu-loras", "2", "--", "--dtype", "bfloat16"])
    cpu = command(args, tmp_path / TINY_ID, passthrough, cpu=True)
    assert cpu[cpu.index("--served-model-name") + 1] == TINY_ID and str(tmp_path / TINY_ID) in cpu
    assert "--enable-lora" in cpu and cpu[cpu.index("--port") + 1] == "9001"
    # the cache of adapters is never smaller than one batch's slots; eager on CPU only; extra flags last
    assert (
        cpu[cpu.index("--max-cpu-loras") + 1] == "4"
        and "--enforce-eager" in cpu
        and cpu[-2:] == ["--dtype", "bfloat16"]
    )
    assert "--enforce-eager" not in command(args, tmp_path, [], cpu=False)
    env = environment(cpu=True)
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True" and env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
