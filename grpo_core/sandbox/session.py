"""One persistent sandboxed process for one job's user code: start, check, exchange messages, recycle, kill.

Shared by the two kinds of user code that run in the sandbox: graders (grpo_core.rewards.python_runner) and tool
environments (grpo_core.rollout.agent.sandboxed). Both are hostile by assumption; the lock-down happens inside the
sandbox (grpo_core.sandbox.worker) before the source is imported, and the parent here never trusts a
reply it has not checked. A session keeps one process alive and replaces it after ``recycle_after_batches``
exchanges, after half of its CPU-time allowance, and after anything abnormal: a timeout (the whole sandbox is
killed at the exchange's wall deadline), a crash, a malformed reply, or a call that exhausted memory or the stack.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from grpo_core.sandbox.launch import (
    SETUP_HINT,
    bwrap_argv,
    make_folders,
    remove_folders,
    resolve,
    sandbox_env,
    weak_argv,
)
from grpo_core.sandbox.limits import GraderError, SandboxLimits, SandboxUnavailable
from grpo_core.sandbox.process import ProtocolError, SandboxDied, SandboxProcess, SandboxTimeout

MAX_ERROR_CHARS = 2000
Mode = Literal["grader", "environment"]
T = TypeVar("T")


class SandboxSession:
    """One job's user source in one sandbox process, started lazily (or eagerly with :meth:`start`).

    Not for concurrent use from several threads (exchanges are serialised by a lock). ``ready`` is what the sandbox
    said once the source loaded (its ``form``, and for an environment its tools)."""

    mode: Mode = "grader"
    what = "grader source"  # how load errors name the source

    def __init__(self, source: str, *, tier: str = "auto", limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()
        self.plan = resolve(tier)
        self.tier = self.plan.tier
        self.form: str | None = None
        self.ready: dict[str, Any] = {}
        self.starts = 0
        self._proc: SandboxProcess | None = None
        self._batches = 0
        self._load_error: str | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._base, self.code_dir, self._work = make_folders(self.plan, source, self.limits, self.mode)
        self._finalizer = weakref.finalize(self, _cleanup, [None], self._base)

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the sandbox now (raises SandboxUnavailable if it cannot start, GraderError if the code won't load)."""
        with self._lock:
            self._ensure()
            if self._load_error:
                raise GraderError(self._load_error)

    def close(self) -> None:
        """Kill the sandbox and delete its folders. Idempotent."""
        with self._lock:
            self._closed = True
            self._discard()
            self._finalizer()

    def _exchange(
        self,
        payload: dict[str, Any],
        timeout: float,
        max_reply: int,
        parse: Callable[[Any], tuple[T, float, bool]],
        doing: str,
    ) -> tuple[T | None, str | None, Literal["load", "sandbox"] | None]:
        """Send ``payload`` and parse the reply: (parsed, None, None), or (None, why, "load"|"sandbox") when the
        source does not load or the sandbox failed (then the process is gone and the next exchange starts anew).
        ``parse`` returns (parsed, the sandbox's CPU seconds so far, whether it asks to be replaced); ``doing`` ends
        the message of a crash ("while scoring this batch")."""
        if self._closed:
            raise GraderError(f"this {type(self).__name__} is closed")
        proc = self._ensure()
        if proc is None:
            return None, self._load_error or f"{self.what} failed to load", "load"
        try:
            reply = proc.request(payload, time.monotonic() + timeout, max_reply)
            parsed, cpu, exhausted = parse(reply)
        except SandboxTimeout:
            self._discard()
            return None, f"timed out after {timeout:g} s: the sandbox was killed", "sandbox"
        except SandboxDied:
            reason = proc.exit_reason()
            tail = proc.stderr_tail(wait=0.5)
            self._discard()
            return None, f"the sandbox {reason} {doing}" + (f"; stderr: {tail}" if tail else ""), "sandbox"
        except ProtocolError as exc:
            self._discard()
            return None, f"the sandbox sent an invalid reply ({exc}): the sandbox was killed", "sandbox"
        self._batches += 1
        if self._batches >= self.limits.recycle_after_batches or cpu > self.limits.cpu_seconds / 2 or exhausted:
            self._discard()
        return parsed, None, None

    def _ensure(self) -> SandboxProcess | None:
        """The live sandbox process, started and checked if needed; None when the source does not load."""
        if self._load_error is not None:
            return None
        if self._proc is not None:
            if self._proc.alive():
                return self._proc
            # It died while idle: --die-with-parent kills it when the *thread* that started it exits.
            self._discard()
        plan, limits = self.plan, self.limits
        if plan.tier == "bwrap":
            argv, cwd = bwrap_argv(plan, self.code_dir, limits), self._work
            env = sandbox_env("/tmp")
        else:
            argv, cwd = weak_argv(plan, self.code_dir), self._work
            env = sandbox_env(self._work)
        try:
            proc = SandboxProcess(argv, env=env, cwd=cwd, uid=plan.uid, gid=plan.gid, via_bwrap=plan.tier == "bwrap")
        except OSError as exc:
            raise SandboxUnavailable(f"could not launch the {plan.tier} sandbox: {exc}") from exc
        self.starts += 1
        self._proc = proc
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _cleanup, [proc], self._base)
        self._batches = 0
        deadline = time.monotonic() + limits.load_timeout_seconds
        self._check_boot(proc, deadline)
        try:
            ready = proc.receive(deadline, 1 << 20)
        except (SandboxTimeout, SandboxDied, ProtocolError) as exc:
            if isinstance(exc, SandboxTimeout):
                why = f"timed out after {limits.load_timeout_seconds:g} s: the sandbox was killed"
            elif isinstance(exc, SandboxDied):
                why = f"the sandbox {proc.exit_reason()}"
            else:
                why = f"invalid message from the sandbox ({exc})"
            self._load_error = f"{self.what} failed to load: {why}"
            self._discard()
            return None
        if not isinstance(ready, dict) or not ready.get("ready"):
            err = ready.get("error") if isinstance(ready, dict) else None
            self._load_error = str(err or f"{self.what} failed to load")[:MAX_ERROR_CHARS]
            self._discard()
            return None
        self.form = ready.get("form")
        self.ready = ready
        return proc

    def _check_boot(self, proc: SandboxProcess, deadline: float) -> None:
        """The first message comes from our code before user code loads: a failure here is the platform's."""
        try:
            boot = proc.receive(deadline, 4096)
        except (SandboxTimeout, SandboxDied, ProtocolError) as exc:
            reason = "did not start in time" if isinstance(exc, SandboxTimeout) else proc.exit_reason()
            tail = proc.stderr_tail(wait=0.5)
            self._discard()
            raise SandboxUnavailable(
                f"the {self.plan.tier} sandbox {reason}" + (f": {tail}" if tail else "") + f" ({SETUP_HINT})"
            ) from None
        launched_as = proc.host_uid()
        if (
            not isinstance(boot, dict)
            or boot.get("seccomp") != 2
            or boot.get("uid") in (0, None)
            or launched_as in (0, None)
        ):
            self._discard()
            raise SandboxUnavailable(
                f"the {self.plan.tier} sandbox failed its start-up check (launched as uid {launched_as}): {boot!r}"
            )

    def _discard(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc = None


def reply_cpu(reply: dict[str, Any]) -> float:
    """The sandbox's CPU seconds so far, as its reply states them (0 when it does not)."""
    cpu = reply.get("cpu")
    return float(cpu) if isinstance(cpu, int | float) and not isinstance(cpu, bool) else 0.0


def _cleanup(procs: list[SandboxProcess | None], base: str) -> None:
    """Finalizer: kill a still-running sandbox and delete the folders (also at interpreter exit)."""
    for proc in procs:
        if proc is not None:
            proc.kill()
    remove_folders(base)
