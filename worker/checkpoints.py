"""Checkpoints on the worker's side, for a job and a training-API session alike: packed into the tars the store
holds, uploaded, and unpacked again.

Two tars, one format each, whoever writes them: ``pack_adapter``, the PEFT adapter users download, load and serve
(a job's checkpoint, a training run's sampler checkpoint); ``pack_checkpoint``, the whole folder an exact resume
needs (a job's training state, a training run's ``save_state``). What registers a checkpoint with the API after its
upload is the caller's (worker.reporting for a job, the session's result for a training run): the registration is
the commit point, the upload alone is not.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from grpo_core.checkpoint import ADAPTER_FILES
from runtime.storage import ObjectStore

Pack = Callable[[Path, Path], Path]


def pack_adapter(ckpt_dir: Path, dest: Path) -> Path:
    """Tar of the adapter's files (grpo_core.checkpoint.ADAPTER_FILES): the PEFT adapter users download and load."""
    with tarfile.open(dest, "w") as tar:
        for name in ADAPTER_FILES:
            tar.add(ckpt_dir / name, arcname=name)
    return dest


def pack_checkpoint(ckpt_dir: Path, dest: Path) -> Path:
    """Tar of the whole checkpoint folder (adapter, training state, manifest): what an exact resume needs."""
    with tarfile.open(dest, "w") as tar:
        for f in sorted(ckpt_dir.iterdir()):
            if f.is_file() and not f.name.startswith("."):
                tar.add(f, arcname=f.name)
    return dest


def unpack(store: ObjectStore, key: str, folder: Path) -> Path:
    """The tar at ``key`` (``pack_adapter``'s or ``pack_checkpoint``'s) extracted into ``folder``, made if need be:
    regular files only, nothing outside it (tarfile's ``data`` filter). The tar itself is not kept."""
    folder.mkdir(parents=True, exist_ok=True)
    tar_path = folder.with_suffix(".tar")
    store.get_file(key, tar_path)
    try:
        with tarfile.open(tar_path) as tar:
            tar.extractall(folder, filter="data")
    finally:
        tar_path.unlink(missing_ok=True)
    return folder


def upload(store: ObjectStore, key: str, folder: Path, pack: Pack) -> int:
    """``folder`` packed by ``pack`` (``pack_adapter`` or ``pack_checkpoint``) and put at ``key``; the tar's size in
    bytes. The tar, written beside the folder, is removed; the folder is the caller's."""
    with tempfile.TemporaryDirectory(prefix=".upload-", dir=folder.parent) as tmp:
        tar_path = pack(folder, Path(tmp) / f"{folder.name}.tar")
        size = tar_path.stat().st_size
        store.put_file(key, tar_path)
    return size
