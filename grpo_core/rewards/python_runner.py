"""Run user grader source in a separate Python process with a wall-clock timeout.

This is isolation from the trainer (a crash, an infinite loop or a leaked global cannot touch the training
process), not a security sandbox: the child runs as the worker's user with ``-I`` (isolated mode, no user site,
no PYTHON* env), an empty environment and a scratch working directory. The seccomp/namespace sandbox is a
later step (issue #4). Data crosses the pipe as JSON (never pickle), one batch per process.

Protocol: stdin = {"source", "samples", "items"}; stdout = [{"score": float|None, "error": str|None}, ...].
A per-sample exception becomes that sample's error; a timeout or a crash of the whole child is a GraderError.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Any

_CHILD = r"""
import json, sys, traceback
req = json.loads(sys.stdin.read())
out = []
try:
    ns = {"__name__": "user_grader"}
    exec(compile(req["source"], "<grader>", "exec"), ns)
    grade = ns["grade"]
except BaseException as exc:
    msg = f"grader source failed to load: {type(exc).__name__}: {exc}"
    out = [{"score": None, "error": msg} for _ in req["samples"]]
else:
    for sample, item in zip(req["samples"], req["items"]):
        try:
            value = grade(sample, item)
            if hasattr(value, "item"):
                value = value.item()
            json.dumps(value)
            out.append({"score": value, "error": None})
        except BaseException as exc:
            out.append({"score": None, "error": f"{type(exc).__name__}: {exc}"})
sys.stdout.write("\n" + "@@RESULT@@" + json.dumps(out))
"""

_MARK = "@@RESULT@@"


class GraderError(RuntimeError):
    """The grader process as a whole failed (timeout, crash, unreadable output)."""


def run_python_grader(
    source: str, samples: list[dict[str, Any]], items: list[dict[str, Any]], *, timeout: float
) -> list[dict[str, Any]]:
    payload = json.dumps({"source": source, "samples": samples, "items": items})
    with tempfile.TemporaryDirectory(prefix="rft-grader-") as scratch:
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", _CHILD],
                input=payload,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=scratch,
                env={"PATH": "/usr/bin:/bin", "HOME": scratch},
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GraderError(f"python grader timed out after {timeout:g} s on a batch of {len(samples)}") from None
    _, mark, result = proc.stdout.rpartition(_MARK)
    if proc.returncode != 0 or not mark:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise GraderError(f"python grader process exited with code {proc.returncode}: {' | '.join(tail)}")
    return json.loads(result)
