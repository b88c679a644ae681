"""The process inside the sandbox: lock itself down, load the user's code, then answer batches until EOF.

The code is a grader (``mode: grader`` in config.json) or a tool environment (``mode: environment``: tool
functions, or a ``respond(messages, item)``, grpo_core.rollout.agent); the protocol below is the grader's, the
environment's follows it.

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
Environment mode:
  worker -> parent  {"ready": true, "form": "tools", "tools": [{"name", "doc", "params": [...]}]}
                    | {"ready": true, "form": "respond"} | {"ready": false, "error": str}
  parent -> worker  {"calls": [{"tool": name, "arguments": {...}, "item": {...}}
                               | {"respond": [messages], "item": {...}}], "timeout": float, "max_chars": int}
  worker -> parent  {"results": [[value|null, error|null, seconds], ...], "cpu": float, "recycle": bool}
A call runs under its own deadline (``timeout``, SIGALRM): a tool that sleeps fails alone with an error the model
reads, and the parent's wall deadline for the whole batch stays the backstop for code that ignores the signal.
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import signal
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


class CallTimeout(BaseException):
    """A tool or ``respond`` call ran past its own deadline (a BaseException: ``except Exception`` in user code
    cannot swallow it)."""


def _on_alarm(signum: int, frame: object) -> None:
    raise CallTimeout()


def _load_environment(source_path: str) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """("respond", {"respond": fn}, []) or ("tools", {name: fn}, their signatures): a ``respond`` wins; otherwise
    every public function the source defines is a tool."""
    import inspect

    with open(source_path, encoding="utf-8") as fh:
        source = fh.read()
    namespace: dict[str, Any] = {"__name__": "user_environment", "__file__": source_path}
    exec(compile(source, source_path, "exec", dont_inherit=True), namespace)
    if callable(namespace.get("respond")):
        return "respond", {"respond": namespace["respond"]}, []
    tools = {
        name: fn
        for name, fn in namespace.items()
        if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == "user_environment"
    }
    if not tools:
        raise NameError("the source defines neither respond(messages, item) nor any tool function")
    described = []
    for name, fn in tools.items():
        params = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            ann = p.annotation
            shown = None if ann is p.empty else (ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)))
            params.append({"name": p.name, "annotation": shown, "required": p.default is p.empty})
        described.append({"name": name, "doc": inspect.getdoc(fn) or "", "params": params})
    return "tools", tools, described


def _as_text(value: object, max_chars: int) -> tuple[str | None, str | None]:
    """A tool's value as the text the model reads: a string as is, None as "", JSON values as JSON."""
    if isinstance(value, str):
        text = value
    elif value is None:
        text = ""
    else:
        try:
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError("not finite")
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return None, f"the tool returned a value of type {type(value).__name__}, not a string or a JSON value"
    if len(text) > max_chars:
        text = text[:max_chars] + f"... [{len(text) - max_chars} more characters cut]"
    return text, None


def _environment_call(
    form: str, fns: dict[str, Any], call: dict[str, Any], max_chars: int
) -> tuple[object, str | None]:
    """One tool call or ``respond`` call (already under its deadline)."""
    item = call.get("item")
    if form == "respond":
        value = fns["respond"](call.get("respond"), item)
        if value is not None:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError, RecursionError):
                return None, f"respond() returned a {type(value).__name__} that is not JSON"
        return value, None
    fn = fns.get(call.get("tool", ""))
    if fn is None:
        return None, f"unknown tool {call.get('tool')!r}"
    import inspect

    args = dict(call.get("arguments") or {})
    if "item" in inspect.signature(fn).parameters:
        args["item"] = item
    return _as_text(fn(**args), max_chars)


def _serve_environment(proto_in: int, proto_out: int) -> None:
    try:
        form, fns, described = _load_environment(GRADER_FILE)
    except BaseException as exc:
        _send(proto_out, {"ready": False, "error": f"environment source failed to load: {_describe(exc)}"})
        return
    _send(proto_out, {"ready": True, "form": form, "tools": described})
    signal.signal(signal.SIGALRM, _on_alarm)
    import time

    while True:
        req = _recv(proto_in)
        if not isinstance(req, dict):
            return
        timeout, max_chars = float(req.get("timeout", 5.0)), int(req.get("max_chars", 4000))
        results: list[tuple[object, str | None, float]] = []
        exhausted = False
        for call in req.get("calls", []):
            t0 = time.monotonic()
            try:
                signal.setitimer(signal.ITIMER_REAL, timeout)
                try:
                    value, error = _environment_call(form, fns, call, max_chars)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except CallTimeout:
                value, error = None, f"timed out after {timeout:g} s"
                exhausted = True  # interrupted anywhere, maybe inside a lock: start a fresh process next time
            except BaseException as exc:
                exhausted = exhausted or isinstance(exc, MemoryError | RecursionError)
                value, error = None, _describe(exc)
            results.append((value, error, round(time.monotonic() - t0, 6)))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        _send(proto_out, {"results": results, "cpu": usage.ru_utime + usage.ru_stime, "recycle": exhausted})


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
    if cfg.get("mode") == "environment":
        _serve_environment(proto_in, proto_out)
        return
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
