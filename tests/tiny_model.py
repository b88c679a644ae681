"""A tiny random causal LM and a local tokenizer, built from a config: no hub, no download.

Its EOS doubles as its pad token, as SmolLM2's and Qwen's do, so tests exercise the "never mask by pad id" rule.
"""

from __future__ import annotations

import string
from pathlib import Path

TINY_ID = "tiny-llama"


def build_tiny_model(catalog_dir: Path, model_id: str = TINY_ID, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    target = catalog_dir / model_id
    if (target / "config.json").is_file():
        return target
    chars = list(string.digits + string.ascii_letters + " +-*/=?.,:!()")
    vocab = {"<eos>": 0, "<bos>": 1} | {c: i + 2 for i, c in enumerate(chars)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<eos>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    from tokenizers import decoders

    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", bos_token="<bos>", pad_token="<eos>")
    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=0,
        pad_token_id=0,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    fast.save_pretrained(target)
    return target
