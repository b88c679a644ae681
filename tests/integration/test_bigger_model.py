"""A bigger model through the registry: no package here ships the weights of an open model larger than
SmolLM2-135M (and nothing may be downloaded from a hub), so this is a randomly initialised model of a realistic
architecture: Qwen2.5-0.5B's shape (24 layers, hidden 896, 14 query / 2 key-value heads, MLP 4864, tied
embeddings, bf16) with SmolLM2's tokenizer (49,152 tokens instead of Qwen's 151,936: 0.40 B parameters instead
of 0.49 B). It is registered (metadata read from its files), fetched through a worker's cache, its prompts are
counted as the API counts them, and it trains one GRPO step with LoRA on every linear layer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from safetensors import safe_open

from api.db.session import make_engine, make_sessionmaker
from api.models import service as model_registry
from grpo_core.data.prompt_tokens import PromptCounter
from grpo_core.models.catalog import SMOLLM2_ID
from grpo_core.schemas.config import GRPOConfig
from runtime.storage import LocalStore
from tests.helpers import ARITH_ROWS, migrate
from tests.training import DigitShare, Recorder
from worker.model_cache import ModelCache

pytestmark = [pytest.mark.integration, pytest.mark.slow]
LINEAR = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


@pytest.fixture(scope="module")
def qwen_shaped(smollm2_catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("qwen") / "qwen2-shaped-0.4b"
    tok = AutoTokenizer.from_pretrained(smollm2_catalog / SMOLLM2_ID)
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=1_000_000.0,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_a_qwen2_shaped_half_billion_model_registers_fetches_counts_and_trains_a_step(
    qwen_shaped: Path, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    from grpo_core.data.rows import prompt_text
    from grpo_core.trainer import train

    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    engine = make_engine(url)
    store = LocalStore(tmp_path / "objects")
    with make_sessionmaker(engine)() as session:
        row = model_registry.register(
            session, store, str(qwen_shaped), model_id="qwen2-shaped", hub_id="org/qwen2-0.4b"
        )
        source = model_registry.source_of(row)
    engine.dispose()
    assert row.architecture == "Qwen2ForCausalLM" and row.model_type == "qwen2"
    assert row.dtype == "bfloat16" and row.context_length == 32768 and row.chat_template
    assert 0.39e9 < (row.parameter_count or 0) < 0.41e9, row.parameter_count

    model_dir = ModelCache(tmp_path / "cache", 10**11).fetch(store, source)
    tok = AutoTokenizer.from_pretrained(model_dir)
    counter = PromptCounter(model_dir)
    for r in ARITH_ROWS[:3]:
        assert next(counter.counts([r])) == len(tok(prompt_text(r, tok), add_special_tokens=False)["input_ids"])

    cfg = GRPOConfig(
        max_steps=1, batch_size=2, group_size=2, max_completion_tokens=8, learning_rate=1e-4, precision="bf16"
    )
    rec = Recorder()
    started = time.monotonic()
    result = train(
        cfg, model_dir, ARITH_ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path / "ckpt", base_name="org/q"
    )
    seconds = time.monotonic() - started
    print(f"one GRPO step of 2 prompts × 2 samples on the 0.40 B model: {seconds:.0f} s (load included)")
    assert [m.step for m in rec.steps] == [1] and rec.steps[0].loss == rec.steps[0].loss  # finite
    assert result.final_checkpoint is not None
    adapter = json.loads((result.final_checkpoint / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == "org/q"
    with safe_open(str(result.final_checkpoint / "adapter_model.safetensors"), "pt") as f:
        names = list(f.keys())
    targeted = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n in names}
    assert targeted == LINEAR  # LoRA on every linear layer of the Qwen2 block ("all-linear"), not the head
    assert len(names) == 24 * len(LINEAR) * 2  # A and B of each, in all 24 layers
