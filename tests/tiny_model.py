"""A tiny random causal LM and a local tokenizer, built from a config: no hub, no download.

Its EOS doubles as its pad token, as SmolLM2's and Qwen's do, so tests exercise the "never mask by pad id" rule.
"""

from __future__ import annotations

import string
from pathlib import Path

TINY_ID = "tiny-llama"


def build_tiny_model(
    catalog_dir: Path,
    model_id: str = TINY_ID,
    seed: int = 0,
    *,
    hidden_size: int = 32,
    num_attention_heads: int = 4,
    peaked_eos: bool = False,
) -> Path:
    """The model in ``catalog_dir/model_id``. ``hidden_size / num_attention_heads`` is the head dim (vLLM's CPU
    attention needs 32, 64, …); ``peaked_eos`` spreads the logits and makes EOS likely enough that about half
    the completions stop within 24 tokens (random init is near-uniform over the vocabulary)."""
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
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=0,
        pad_token_id=0,
        tie_word_embeddings=not peaked_eos,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    if peaked_eos:
        with torch.no_grad():
            model.lm_head.weight.mul_(4.0)
            model.lm_head.weight[0].mul_(-1.0)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    fast.save_pretrained(target)
    return target
