"""The process inside the sandbox: lock itself down, load the user's grader, then score batches until EOF.

This file is copied next to the grader source into the sandbox's read-only /code and run by the sandbox's own
interpreter (``python -I -B worker.py``), so it may import only the standard library and ``seccomp`` beside it.
Order matters and is the point of this file: protocol fds are moved away from 0/1 and user-visible stdout is
capped, rlimits are set (soft = hard, so user code cannot raise them), the process is made non-dumpable, the
seccomp filter is installed, and only then is the user's source compiled and executed.

Protocol (both directions): a 4-byte big-endian length, then that many bytes of UTF-8 JSON. Never pickle.
  worker -> parent  {"booted": true, "uid": int, "seccomp": int}       right after the lock-down
  worker -> parent  {"ready": true, "form": "grade"|"reward"} | {"ready": false, "error": str}
  parent -> worker  {"samples": [...], "items": [...]}
  worker -> parent  {"results": [[score|null, error|null], ...], "cpu": float}
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import struct
import sys
import traceback
from collections.abc import Callable
from typing import Any

CODE_DIR = os.path.dirname(os.path.abspath(__file__))
GRADER_FILE = os.path.join(CODE_DIR, "grader.py")
MAX_ERROR_CHARS = 1500
STDOUT_BUDGET = 64 * 1024  # bytes of user prints forwarded to stderr per process; the rest is dropped


class _CappedOutput(io.TextIOBase):
    """sys.stdout/sys.stderr for user code: forwards a capped amount to fd 2, so 100 MB of prints costs nothing."""

    def __init__(self, fd: int, budget: int) -> None:
        self._fd, self._left = fd, budget

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if self._left > 0 and s:
            chunk = s[: self._left].encode("utf-8", "replace")[: self._left]
            self._left -= len(chunk)
            try:
                os.write(self._fd, chunk)
            except OSError:
                self._left = 0
        return len(s)


def _send(fd: int, obj: object) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd: int) -> object | None:
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _lock_down(cfg: dict[str, Any]) -> int:
    """rlimits, non-dumpable, seccomp: everything user code must not be able to undo. Returns the seccomp mode."""
    mb = 1024 * 1024
    for name, value in (
        ("RLIMIT_AS", cfg["memory_mb"] * mb),
        ("RLIMIT_CPU", cfg["cpu_seconds"]),
        ("RLIMIT_FSIZE", cfg["file_size_mb"] * mb),
        ("RLIMIT_NOFILE", cfg["open_files"]),
        ("RLIMIT_NPROC", cfg["processes"]),
        ("RLIMIT_CORE", 0),
    ):
        resource.setrlimit(getattr(resource, name), (value, value))
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE=0: /proc/<pid>/mem, environ closed to the same uid
    sys.path.insert(0, CODE_DIR)
    import seccomp

    seccomp.install(allow_unix_sockets=cfg["allow_unix_sockets"], own_pid=os.getpid())
    sys.path.remove(CODE_DIR)
    mode: int = seccomp.seccomp_mode()
    return mode


def _describe(exc: BaseException, tb_limit: int = 3) -> str:
    """'ZeroDivisionError: division by zero' plus the last frames that are in the user's file."""
    try:
        head = traceback.format_exception_only(type(exc), exc)[-1].strip()
    except BaseException:
        head = type(exc).__name__
    if isinstance(exc, PermissionError) and exc.errno == 1:
        head += " (refused by the sandbox: no network, no subprocesses)"
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == GRADER_FILE]
        where = " <- ".join(f"line {f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames[-tb_limit:][::-1])
    except BaseException:
        where = ""
    msg = f"{head} (at {where})" if where else head
    return msg[:MAX_ERROR_CHARS]


def _check(fname: str, value: object) -> tuple[float | None, str | None]:
    """A finite float, or the reason the returned value is not one."""
    try:
        if not isinstance(value, int | float) and hasattr(value, "item"):
            value = value.item()  # numpy scalars
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return None, f"{fname}() returned {shown} ({type(value).__name__}), not a finite number"
        score = float(value)
    except BaseException as exc:
        return None, f"{fname}() returned a value that is not a number: {_describe(exc)}"
    if not math.isfinite(score):
        return None, f"{fname}() returned {score!r}, not a finite number"
    return score, None


def _load(source_path: str) -> tuple[str, Callable[..., object]]:
    with open(source_path, encoding="utf-8") as fh:
        source = fh.read()
    namespace: dict[str, Any] = {"__name__": "user_grader", "__file__": source_path}
    exec(compile(source, source_path, "exec", dont_inherit=True), namespace)  # not this file's __future__ flags
    for form in ("grade", "reward"):
        if callable(namespace.get(form)):
            return form, namespace[form]
    raise NameError("the source defines neither grade(sample, item) nor reward(prompt, completion, **row)")


def _score(
    form: str, fn: Callable[..., object], samples: list[Any], items: list[Any]
) -> tuple[list[tuple[float | None, str | None]], bool]:
    """(one [score, error] per item, whether an item exhausted memory or the stack: the parent then replaces
    this process, whose heap or interpreter state may be left damaged)."""
    results: list[tuple[float | None, str | None]] = []
    exhausted = False
    for sample, item in zip(samples, items, strict=True):
        try:
            if form == "grade":
                if isinstance(sample, dict):
                    sample.setdefault("output_json", None)
                value = fn(sample, item)
            else:
                row = {k: v for k, v in item.items() if k not in ("prompt", "completion")}
                prompt = item.get("prompt") or item.get("messages")
                value = fn(prompt, sample.get("output_text", ""), **row)
            results.append(_check(form, value))
        except BaseException as exc:
            exhausted = exhausted or isinstance(exc, MemoryError | RecursionError)
            results.append((None, _describe(exc)))
    return results, exhausted


def main() -> None:
    with open(os.path.join(CODE_DIR, "config.json")) as fh:
        cfg = json.load(fh)
    # Protocol on private fds; fd 0 reads nothing, fd 1 is stderr, so no user write can corrupt a reply.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    capped = _CappedOutput(2, STDOUT_BUDGET)
    sys.stdin, sys.stdout, sys.stderr = open(os.devnull), capped, capped  # noqa: SIM115
    mode = _lock_down(cfg)
    _send(proto_out, {"booted": True, "uid": os.getuid(), "seccomp": mode})
    try:
        form, fn = _load(GRADER_FILE)
    except BaseException as exc:
        _send(proto_out, {"ready": False, "error": f"grader source failed to load: {_describe(exc)}"})
        return
    _send(proto_out, {"ready": True, "form": form})
    while True:
        req = _recv(proto_in)
        if not isinstance(req, dict):  # None: the parent closed the pipe
            return
        results, exhausted = _score(form, fn, req["samples"], req["items"])
        usage = resource.getrusage(resource.RUSAGE_SELF)
        _send(proto_out, {"results": results, "cpu": usage.ru_utime + usage.ru_stime, "recycle": exhausted})


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # our own failure (not the user's): say why on the real stderr, exit non-zero
        os.write(2, traceback.format_exc()[-4000:].encode("utf-8", "replace"))
        os._exit(70)
    os._exit(0)  # do not wait for threads the user code may have left running
