"""Checkpoints on local paths: the PEFT adapter users download, plus the state an exact resume needs.

Layout of a checkpoint directory:
    adapter_config.json, adapter_model.safetensors   — loadable with ``PeftModel.from_pretrained``
    trainer_state.pt                                 — step, optimizer, RNG states (not part of the download)
Uploading is the caller's business (a callback); this module never touches the network.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import torch

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
STATE_FILE = "trainer_state.pt"


def save_checkpoint(
    model: Any, optimizer: torch.optim.Optimizer, step: int, out_dir: Path, scheduler: Any = None
) -> Path:
    """Write the adapter and the training state for ``step`` (steps done so far) to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    state = {
        "step": step,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
    }
    torch.save(state, out_dir / STATE_FILE)
    return out_dir


def load_checkpoint(model: Any, optimizer: torch.optim.Optimizer, ckpt_dir: Path, scheduler: Any = None) -> int:
    """Restore adapter weights, optimizer, LR schedule and RNG; returns the step to continue from."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    result = set_peft_model_state_dict(model, load_file(str(ckpt_dir / "adapter_model.safetensors")))
    if result.unexpected_keys:
        raise ValueError(f"checkpoint does not fit this adapter: unexpected {result.unexpected_keys[:3]}")
    # Our own file, written by save_checkpoint: it holds Python RNG state, which needs full unpickling.
    state = torch.load(ckpt_dir / STATE_FILE, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and state.get("scheduler") is not None:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    return int(state["step"])
