"""Merge a downloaded LoRA adapter into its base model: a plain Hugging Face folder (safetensors + tokenizer) for
deployments without LoRA support (``rft adapters merge``). Runs on the user's machine with torch, transformers and
peft installed; nothing is downloaded unless the base is given as a hub id the user's cache can resolve."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path


class MergeError(Exception):
    """What the user must fix (a folder that is not an adapter, a base that cannot be found)."""


def base_of(adapter_dir: Path, catalog_dir: Path | None) -> str:
    """The base model the adapter names (``base_model_name_or_path``), as a local folder when the catalog has it."""
    config_path = adapter_dir / "adapter_config.json"
    if not config_path.is_file():
        raise MergeError(f"{adapter_dir} is not a PEFT adapter (no adapter_config.json): rft adapters download first")
    name = json.loads(config_path.read_text()).get("base_model_name_or_path") or ""
    if not name:
        raise MergeError(f"{config_path} names no base model: pass --base")
    if Path(name).is_dir():
        return name
    if catalog_dir is not None and (catalog_dir / name / "config.json").is_file():
        return str(catalog_dir / name)
    return name  # a hub id: resolved by transformers from the user's cache (or the hub, on the user's machine)


def merge_adapter(adapter_dir: Path, base: str, out_dir: Path, dtype: str = "auto") -> list[str]:
    """Write base + adapter merged (peft's ``merge_and_unload``) to ``out_dir``, atomically; its file names."""
    try:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MergeError(f"merging needs torch, transformers and peft installed ({exc.name} is missing)") from None
    if out_dir.exists() and any(out_dir.iterdir()):
        raise MergeError(f"{out_dir} exists and is not empty")
    try:  # dtype by name ("auto", "float32", "bfloat16"): transformers resolves it (this CLI never imports torch)
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(base)
    except OSError as exc:
        raise MergeError(f"cannot load the base model {base!r}: {exc} (pass --base PATH to its folder)") from None
    merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    tmp = out_dir.with_name(f".{out_dir.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    merged.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if out_dir.exists():
        out_dir.rmdir()
    tmp.rename(out_dir)
    return sorted(p.name for p in out_dir.iterdir())
