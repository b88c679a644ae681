"""A node-local cache of registered base models, keyed by their digest (api.models.service).

Every worker process on a node (a job's ranks, several worker slots) shares one cache folder:

- **One download per node.** ``fetch`` holds an exclusive ``flock`` on ``.<digest>.lock`` while it checks and
  downloads, so the second process waits and then finds the folder.
- **Atomic.** Files go into ``.part-<digest>-<pid>/``, each is checked against its sha256, and the folder is
  renamed to ``<digest>/`` only when complete: a crash leaves a ``.part-`` folder (removed by the next fetch),
  never a half model.
- **LRU with a size cap.** A model's folder mtime is its last use. Before a download, the least recently used
  models go until the new one fits under ``max_bytes``; one in use is never evicted: a process that uses a model
  holds a shared ``flock`` on ``.<digest>.use`` until it ``release``s it (the end of the job or eval run) or
  exits, and eviction needs that lock exclusively (and the model's fetch lock, so nobody is between "found it"
  and "using it"). Locks die with their process. ``node_cache`` gives each process one cache object, so a hold
  outlives the function that fetched the model.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from grpo_core.models.files import sha256_file
from runtime.internal import ModelSource
from runtime.storage import ObjectStore


class ModelFetchError(RuntimeError):
    """A registered model could not be fetched intact (a file missing from the store or not matching its hash)."""


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[IO[str] | None]:
    """The lock on ``path`` (None when ``mode`` has LOCK_NB and another process holds it)."""
    fh = path.open("a")
    try:
        try:
            fcntl.flock(fh, mode)
        except BlockingIOError:
            yield None
            return
        yield fh
    finally:
        fh.close()


_CACHES: dict[tuple[Path, int], ModelCache] = {}


def node_cache(root: Path, max_bytes: int) -> ModelCache:
    """This process's cache object for ``root`` (its holds live as long as the process, or until released)."""
    key = (root.resolve(), max_bytes)
    if key not in _CACHES:
        _CACHES[key] = ModelCache(root, max_bytes)
    return _CACHES[key]


def _folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class ModelCache:
    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._held: dict[str, IO[str]] = {}  # this process's shared use locks, by digest

    def path(self, digest: str) -> Path:
        return self.root / digest

    def fetch(self, store: ObjectStore, source: ModelSource, say: Callable[[str], None] | None = None) -> Path:
        """The model's folder on this node, downloaded first if needed; marked in use by this process until it
        exits (or ``release``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.path(source.digest)
        with _flock(self.root / f".{source.digest}.lock", fcntl.LOCK_EX):
            if target.is_dir():
                os.utime(target)  # its last use, for the LRU
            else:
                size = sum(f.size for f in source.files)
                self._make_room(size, keep=source.digest, say=say)
                t = time.monotonic()
                self._download(store, source, target)
                if say is not None:
                    say(f"Fetched base model {source.id} ({size / 1e9:.2f} GB) in {time.monotonic() - t:.0f} s")
            self._hold(source.digest)
        return target

    def release(self, digest: str) -> None:
        """This process no longer uses the model: it may be evicted."""
        fh = self._held.pop(digest, None)
        if fh is not None:
            fh.close()

    def hold_across_exec(self) -> None:
        """Keep this process's holds through ``os.execve`` (the inference launcher becomes vLLM): the lock belongs
        to the open file, which an inheritable descriptor carries into the new program."""
        for fh in self._held.values():
            os.set_inheritable(fh.fileno(), True)

    def release_all(self) -> None:
        for digest in list(self._held):
            self.release(digest)

    def _hold(self, digest: str) -> None:
        if digest in self._held:
            return
        fh = (self.root / f".{digest}.use").open("a")
        fcntl.flock(fh, fcntl.LOCK_SH)
        self._held[digest] = fh

    def _download(self, store: ObjectStore, source: ModelSource, target: Path) -> None:
        # under the model's exclusive fetch lock every partial download of it is a crashed one (a pid check would
        # keep those whose pid was reused, common in containers); so is an eviction a crash interrupted
        for stale in [*self.root.glob(f".part-{source.digest}-*"), *self.root.glob(".evict-*")]:
            shutil.rmtree(stale, ignore_errors=True)
        tmp = self.root / f".part-{source.digest}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            for f in source.files:
                dest = (tmp / f.name).resolve()
                if not dest.is_relative_to(tmp.resolve()):
                    raise ModelFetchError(f"model file name escapes its folder: {f.name!r}")
                dest.parent.mkdir(parents=True, exist_ok=True)
                store.get_file(source.object_prefix + f.name, dest)
                if sha256_file(dest) != f.sha256:
                    raise ModelFetchError(
                        f"{source.id}: {f.name} does not match its sha256 in the registry (corrupt or replaced in "
                        "the object store)"
                    )
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def entries(self) -> list[tuple[str, float, int]]:
        """(digest, last use, bytes) of every complete model, least recently used first."""
        out = []
        for p in self.root.iterdir() if self.root.is_dir() else []:
            if p.is_dir() and not p.name.startswith("."):
                out.append((p.name, p.stat().st_mtime, _folder_size(p)))
        return sorted(out, key=lambda e: e[1])

    def _make_room(self, need: int, *, keep: str, say: Callable[[str], None] | None) -> None:
        entries = self.entries()
        used = sum(e[2] for e in entries)
        for digest, _, size in entries:
            if used + need <= self.max_bytes:
                return
            if digest == keep or digest in self._held:
                continue
            if self._evict(digest):
                used -= size
                if say is not None:
                    say(f"Evicted base model {digest[:12]} ({size / 1e9:.2f} GB) from this node's model cache")
        if used + need > self.max_bytes and say is not None:
            say(
                f"The model cache holds {used / 1e9:.2f} GB in use; adding {need / 1e9:.2f} GB exceeds its cap "
                f"({self.max_bytes / 1e9:.2f} GB, MODEL_CACHE_MAX_GB)"
            )

    def _evict(self, digest: str) -> bool:
        """Remove one model unless a process uses it or is fetching it right now."""
        with (
            _flock(self.root / f".{digest}.lock", fcntl.LOCK_EX | fcntl.LOCK_NB) as fetching,
            _flock(self.root / f".{digest}.use", fcntl.LOCK_EX | fcntl.LOCK_NB) as using,
        ):
            if fetching is None or using is None:
                return False
            doomed = self.root / f".evict-{digest}-{os.getpid()}"
            self.path(digest).rename(doomed)  # gone for readers at once; the delete may take a while
        shutil.rmtree(doomed, ignore_errors=True)
        return True
