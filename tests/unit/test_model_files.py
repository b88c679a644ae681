"""The registry's reading of a model folder (grpo_core.models.files) and the API's prompt counts
(grpo_core.data.prompt_tokens) against transformers' own, on the tiny model with real chat templates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from grpo_core.data.prompt_tokens import PromptCounter, first_over
from grpo_core.models.files import ModelFolderError, inspect_model_folder, manifest_digest

# Qwen3's template logic in miniature: `enable_thinking` (a chat_template_kwargs) changes the rendered prompt.
THINKING_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


def copy_model(src: Path, dest: Path, template: str | None = None) -> Path:
    shutil.copytree(src, dest)
    if template is not None:
        tc = json.loads((dest / "tokenizer_config.json").read_text())
        tc["chat_template"] = template
        (dest / "tokenizer_config.json").write_text(json.dumps(tc))
    return dest


def test_the_metadata_comes_from_the_files_without_loading_weights(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    info = inspect_model_folder(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert info.architecture == "LlamaForCausalLM" and info.model_type == "llama"
    assert info.parameter_count == model.num_parameters()  # from the safetensors header's shapes alone
    assert info.dtype == "float32" and info.context_length == 256
    assert info.chat_template is False and info.license is None
    names = [f.name for f in info.files]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(names)
    assert all(len(f.sha256) == 64 and f.size > 0 for f in info.files)
    assert info.size == sum(p.stat().st_size for p in tiny_model_dir.iterdir())
    # the digest covers names and contents: a changed byte, a new digest
    assert info.digest == manifest_digest(list(reversed(info.files)))
    assert inspect_model_folder(tiny_model_dir).digest == info.digest


def test_a_changed_file_changes_the_digest_and_the_license_is_kept(tiny_model_dir: Path, tmp_path: Path) -> None:
    other = copy_model(tiny_model_dir, tmp_path / "m", THINKING_TEMPLATE)
    (other / "LICENSE").write_text("Apache License 2.0 …")
    info = inspect_model_folder(other)
    assert info.digest != inspect_model_folder(tiny_model_dir).digest
    assert info.license == "Apache License 2.0 …" and info.chat_template is True


def test_a_folder_that_is_not_a_causal_lm_with_a_tokenizer_is_refused_naming_everything_missing(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(ModelFolderError) as exc:
        inspect_model_folder(bare)
    assert [m.split(" ")[0] for m in exc.value.missing] == ["config.json", "tokenizer.json", "weights"]

    encoder = copy_model(tiny_model_dir, tmp_path / "encoder")
    cfg = json.loads((encoder / "config.json").read_text())
    (encoder / "config.json").write_text(json.dumps(cfg | {"architectures": ["BertModel"]}))
    (encoder / "tokenizer.json").unlink()
    with pytest.raises(ModelFolderError) as exc:
        inspect_model_folder(encoder)
    assert "architectures=['BertModel']" in str(exc.value) and "tokenizer.json" in str(exc.value)

    with pytest.raises(ModelFolderError, match="no such folder"):
        inspect_model_folder(tmp_path / "nowhere")


@pytest.mark.parametrize("thinking", [None, True, False])
def test_prompt_counts_equal_transformers_with_the_chat_template_and_its_kwargs(
    tiny_model_dir: Path, tmp_path: Path, thinking: bool | None
) -> None:
    from transformers import AutoTokenizer

    from grpo_core.data.rows import prompt_text

    folder = copy_model(tiny_model_dir, tmp_path / "chat", THINKING_TEMPLATE)
    kwargs = {} if thinking is None else {"enable_thinking": thinking}
    tok = AutoTokenizer.from_pretrained(folder)
    counter = PromptCounter(folder, kwargs)
    call = {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    tool = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
    rows = [
        {"prompt": "2+3="},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "1+1=?"}]},
        # OpenAI's shapes: content parts, an assistant turn of tool calls, a tool turn, and the tools
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "1+"}, {"type": "text", "text": "1=?"}]},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c", "content": "2"},
                {"role": "user", "content": "2+2=?"},
            ],
            "tools": [tool],
        },
        {"prompt": "3+3=", "tools": [tool]},
    ]
    for row in rows:
        text = prompt_text(row, tok, kwargs)
        assert counter.text(row) == text
        assert next(counter.counts([row])) == len(tok(text, add_special_tokens=False)["input_ids"])
    assert ("<think>" in counter.text(rows[0])) is (thinking is False)


def test_without_a_chat_template_the_prompt_is_the_raw_text(tiny_model_dir: Path) -> None:
    counter = PromptCounter(tiny_model_dir)
    assert counter.text({"prompt": "2+3="}) == "2+3="
    assert list(counter.counts([{"prompt": "2+3="}, {"prompt": "12+13="}])) == [4, 6]  # one token per character
    assert first_over(counter, [{"prompt": "1"}, {"prompt": "123456789"}, {"prompt": "1234567890"}], 8) == (2, 9)
    assert first_over(counter, [{"prompt": "1"}], 8) is None


def test_a_second_copy_of_the_weights_beside_an_index_is_neither_counted_nor_stored(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    folder = copy_model(tiny_model_dir, tmp_path / "mistral-like")
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        names = list(f.keys())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": dict.fromkeys(names, "model.safetensors")})
    )
    shutil.copy(folder / "model.safetensors", folder / "consolidated.safetensors")  # Mistral ships both
    info = inspect_model_folder(folder)
    assert info.parameter_count == inspect_model_folder(tiny_model_dir).parameter_count
    assert "consolidated.safetensors" not in {f.name for f in info.files}
