"""Checkpoints on local paths: the PEFT adapter users download, plus everything an exact resume needs.

Layout of a checkpoint directory:
    adapter_config.json, adapter_model.safetensors   — loadable with ``PeftModel.from_pretrained``
    trainer_state.pt    — optimizer, LR scheduler, every RNG state (torch, CUDA, Python, NumPy) of every rank
    manifest.json       — step, data cursor, best validation so far, the world size that saved it, and the
                          SHA-256 of every other file;
                          written last (atomically), so a folder without it is an interrupted save, never loaded
Uploading is the caller's business (a callback); this module never touches the network. With several ranks the
weights and optimizer state are the same on every rank (grpo_core.hardware.distributed), so rank 0 alone writes them,
with every rank's RNG state gathered beside; a resume with the same world size gives each rank its own state back, one
with another world size gives every rank rank 0's (the trainer says so in an event).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
STATE_FILE = "trainer_state.pt"
MANIFEST = "manifest.json"
FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint folder that is incomplete, corrupted, or does not fit the model."""


@dataclass
class ResumeState:
    """Where a run stands: steps done, prompt batches consumed, the best validation reward so far."""

    step: int
    cursor: int
    best_valid_reward: float | None = None
    best_step: int | None = None
    world_size: int = 1  # ranks of the run that saved it


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def rng_state() -> dict[str, Any]:
    """This process's RNG states (what ``save_checkpoint``'s ``rng_states`` holds one of per rank)."""
    return _rng_state()


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy as np

        state["numpy"] = np.random.get_state()
    except ImportError:
        pass
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` returned (a pool of tenants switches between theirs, grpo_core.pool)."""
    _set_rng_state(state)


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])


def save_checkpoint(
    model: Any,
    optimizer: torch.optim.Optimizer,
    resume: ResumeState,
    out_dir: Path,
    scheduler: Any = None,
    rng_states: list[dict[str, Any]] | None = None,
) -> Path:
    """Write the adapter and the training state after ``resume.step`` steps to ``out_dir``; manifest last.
    ``rng_states``: every rank's RNG states in rank order (default: this process's alone)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST).unlink(missing_ok=True)  # an overwrite is incomplete until its new manifest lands
    # save_embedding_layers=False: the embeddings are never resized here, and "auto" would look for the base's config
    # at base_model_name_or_path, which names the catalog model (grpo_core.models.catalog.base_model_name), not a folder
    model.save_pretrained(out_dir, save_embedding_layers=False)
    state = {
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "rng": _rng_state(),
        "rng_ranks": rng_states or [_rng_state()],
    }
    torch.save(state, out_dir / STATE_FILE)
    files = {name: _sha256(out_dir / name) for name in (*ADAPTER_FILES, STATE_FILE)}
    manifest = {"format": FORMAT, **asdict(resume), "files": files}
    tmp = out_dir / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, out_dir / MANIFEST)
    return out_dir


def read_manifest(ckpt_dir: Path) -> dict[str, Any]:
    """The manifest, after checking every file it lists is present with the recorded hash."""
    path = ckpt_dir / MANIFEST
    if not path.is_file():
        raise CheckpointError(f"{ckpt_dir} has no {MANIFEST}: the save did not complete")
    manifest: dict[str, Any] = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint format {manifest.get('format')!r} is not {FORMAT}")
    for name, digest in manifest["files"].items():
        if not (ckpt_dir / name).is_file() or _sha256(ckpt_dir / name) != digest:
            raise CheckpointError(f"checkpoint file {name} is missing or corrupted")
    return manifest


def load_adapter_weights(model: Any, ckpt_dir: Path) -> None:
    """Only the adapter's weights of the checkpoint in ``ckpt_dir`` into ``model`` (the readiness probe after
    training; resuming uses load_checkpoint, which restores the optimizer and RNG too)."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    result: Any = set_peft_model_state_dict(model, load_file(str(ckpt_dir / "adapter_model.safetensors")))
    if result.unexpected_keys:
        raise CheckpointError(f"checkpoint does not fit this adapter: unexpected {result.unexpected_keys[:3]}")


def load_checkpoint(
    model: Any,
    optimizer: torch.optim.Optimizer,
    ckpt_dir: Path,
    scheduler: Any = None,
    *,
    rank: int = 0,
    world_size: int = 1,
) -> ResumeState:
    """Restore adapter weights, optimizer, LR schedule and RNG (rank ``rank``'s when the checkpoint was saved by
    ``world_size`` ranks, else rank 0's); returns where the run stands, with the world size that saved it."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    manifest = read_manifest(ckpt_dir)
    result: Any = set_peft_model_state_dict(model, load_file(str(ckpt_dir / "adapter_model.safetensors")))
    if result.unexpected_keys:
        raise CheckpointError(f"checkpoint does not fit this adapter: unexpected {result.unexpected_keys[:3]}")
    # Our own file, verified by its hash above: it holds Python RNG state, which needs full unpickling.
    # Loaded on the CPU whatever device saved it: a job checkpointed on a GPU worker resumes on any worker (the
    # optimizer moves its state to its parameters' device; RNG states are CPU tensors by definition).
    state = torch.load(ckpt_dir / STATE_FILE, weights_only=False, map_location="cpu")
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and state.get("scheduler") is not None:
        scheduler.load_state_dict(state["scheduler"])
    ranks = state.get("rng_ranks") or [state["rng"]]
    _set_rng_state(ranks[rank] if len(ranks) == world_size else ranks[0])
    return ResumeState(
        step=int(manifest["step"]),
        cursor=int(manifest["cursor"]),
        best_valid_reward=manifest.get("best_valid_reward"),
        best_step=manifest.get("best_step"),
        world_size=int(manifest.get("world_size", 1)),
    )
