"""Run user Python reward code in a real sandbox: one persistent sandboxed worker per job and grader.

The code is hostile by assumption (it runs on machines holding model weights and storage credentials), so it
runs in bubblewrap + seccomp + rlimits as an unprivileged uid (grpo_core.rewards.sandbox; design and threat
model in the research note "sandbox_reliability.md", Recommended design §1). A process per call would cost
10^4x more, so a :class:`PythonRunner` keeps one sandbox process alive and feeds it batches as length-prefixed
JSON over pipes (never pickle). It replaces the process after ``recycle_after_batches`` batches, after half of
its CPU-time allowance, and after anything abnormal: a timeout (the whole sandbox is killed at the batch's wall
deadline), a crash, a malformed reply, or an item that ran out of memory or recursion.

Errors are per item and name the cause (``ZeroDivisionError: division by zero (at line 3 in grade: ...)``,
``grade() returned nan, not a finite number``, ``timed out after 3 s: the sandbox was killed``). When no tier
can run under the policy, or a sandbox fails its start-up checks (uid 0, no seccomp filter), the runner raises
:class:`SandboxUnavailable`: user code never runs unsandboxed.

Two grader shapes: OpenAI's ``grade(sample, item)`` with ``sample = {"output_text", "output_json"}`` and
``item`` the dataset row; TRL's ``reward(prompt, completion, **row)`` with ``prompt = item["prompt"]`` (or
``item["messages"]``), ``completion = sample["output_text"]`` and ``row`` the item's other columns.
"""

from __future__ import annotations

import math
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from grpo_core.rewards.sandbox import canaries, launch
from grpo_core.rewards.sandbox.limits import GraderError, SandboxLimits, SandboxUnavailable
from grpo_core.rewards.sandbox.process import ProtocolError, SandboxDied, SandboxProcess, SandboxTimeout

__all__ = [
    "Batch",
    "GraderError",
    "PythonRunner",
    "SandboxLimits",
    "SandboxUnavailable",
    "sandbox_status",
    "self_test",
]

MAX_ERROR_CHARS = 2000


BatchFailure = Literal["load", "sandbox"]


@dataclass(frozen=True)
class Batch:
    """One scored batch: ``{"score": float|None, "error": str|None}`` per item, and, when the whole batch failed
    before the user's code could score it, why: ``load`` (the source does not import) or ``sandbox`` (the
    sandbox was killed: a timeout, a crash, a malformed reply)."""

    items: list[dict[str, Any]]
    failure: BatchFailure | None = None


def _failed(n: int, error: str, failure: BatchFailure) -> Batch:
    return Batch([{"score": None, "error": error} for _ in range(n)], failure)


class PythonRunner:
    """A sandboxed grader for one job and one grader source; never share it across jobs or tenants.

    The sandbox starts lazily on the first :meth:`score` (or eagerly with :meth:`start`). Not for concurrent
    use from several threads (calls are serialised by a lock); use one runner per worker thread instead.
    """

    def __init__(self, source: str, *, tier: str = "auto", limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()
        self.plan = launch.resolve(tier)
        self.tier = self.plan.tier
        self.form: str | None = None  # "grade" or "reward", once loaded
        self.starts = 0
        self._proc: SandboxProcess | None = None
        self._batches = 0
        self._load_error: str | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._base, self.code_dir, self._work = launch.make_folders(self.plan, source, self.limits)
        self._finalizer = weakref.finalize(self, _cleanup, [None], self._base)

    def __enter__(self) -> PythonRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the sandbox now (raises SandboxUnavailable if it cannot start, GraderError if the code won't load)."""
        with self._lock:
            self._ensure()
            if self._load_error:
                raise GraderError(self._load_error)

    def score(self, samples: list[dict[str, Any]], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One ``{"score": float|None, "error": str|None}`` per (sample, item); per-item failures never raise."""
        return self.score_batch(samples, items).items

    def score_batch(self, samples: list[dict[str, Any]], items: list[dict[str, Any]]) -> Batch:
        """``score``, saying also whether the batch failed as a whole (see ``Batch``)."""
        if len(samples) != len(items):
            raise ValueError(f"{len(samples)} samples but {len(items)} items")
        n = len(samples)
        if n == 0:
            return Batch([])
        with self._lock:
            if self._closed:
                raise GraderError("this PythonRunner is closed")
            proc = self._ensure()
            if proc is None:
                return _failed(n, self._load_error or "grader source failed to load", "load")
            timeout = self.limits.timeout_for(n)
            try:
                reply = proc.request(
                    {"samples": samples, "items": items}, time.monotonic() + timeout, 65536 + n * 4 * MAX_ERROR_CHARS
                )
                results, cpu, exhausted = self._parse(reply, n)
            except SandboxTimeout:
                self._discard()
                return _failed(n, f"timed out after {timeout:g} s: the sandbox was killed", "sandbox")
            except SandboxDied:
                reason = proc.exit_reason()
                tail = proc.stderr_tail(wait=0.5)
                self._discard()
                why = f"the sandbox {reason} while scoring this batch" + (f"; stderr: {tail}" if tail else "")
                return _failed(n, why, "sandbox")
            except ProtocolError as exc:
                self._discard()
                return _failed(n, f"the sandbox sent an invalid reply ({exc}): the sandbox was killed", "sandbox")
            self._batches += 1
            if self._batches >= self.limits.recycle_after_batches or cpu > self.limits.cpu_seconds / 2 or exhausted:
                self._discard()
            return Batch(results)

    def close(self) -> None:
        """Kill the sandbox and delete its folders. Idempotent."""
        with self._lock:
            self._closed = True
            self._discard()
            self._finalizer()

    # -- internals ---------------------------------------------------------------------------------------------

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
            argv, cwd = launch.bwrap_argv(plan, self.code_dir, limits), self._work
            env = launch.sandbox_env("/tmp")
        else:
            argv, cwd = launch.weak_argv(plan, self.code_dir), self._work
            env = launch.sandbox_env(self._work)
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
            ready = proc.receive(deadline, 65536)
        except (SandboxTimeout, SandboxDied, ProtocolError) as exc:
            if isinstance(exc, SandboxTimeout):
                why = f"timed out after {limits.load_timeout_seconds:g} s: the sandbox was killed"
            elif isinstance(exc, SandboxDied):
                why = f"the sandbox {proc.exit_reason()}"
            else:
                why = f"invalid message from the sandbox ({exc})"
            self._load_error = f"grader source failed to load: {why}"
            self._discard()
            return None
        if not isinstance(ready, dict) or not ready.get("ready"):
            err = ready.get("error") if isinstance(ready, dict) else None
            self._load_error = str(err or "grader source failed to load")[:MAX_ERROR_CHARS]
            self._discard()
            return None
        self.form = ready.get("form")
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
                f"the {self.plan.tier} sandbox {reason}" + (f": {tail}" if tail else "") + f" ({launch.SETUP_HINT})"
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

    def _parse(self, reply: Any, n: int) -> tuple[list[dict[str, Any]], float, bool]:
        """(the items' results, the sandbox's CPU seconds so far, whether it asks to be replaced)."""
        if not isinstance(reply, dict) or not isinstance(reply.get("results"), list) or len(reply["results"]) != n:
            raise ProtocolError(f"expected {n} results")
        out: list[dict[str, Any]] = []
        for entry in reply["results"]:
            if not isinstance(entry, list) or len(entry) != 2:
                raise ProtocolError("a result is not a [score, error] pair")
            score, error = entry
            if error is not None:
                out.append({"score": None, "error": str(error)[:MAX_ERROR_CHARS]})
            elif isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
                out.append({"score": float(score), "error": None})
            else:
                raise ProtocolError(f"invalid score {score!r}"[:200])
        cpu = reply.get("cpu")
        cpu_seconds = float(cpu) if isinstance(cpu, int | float) and not isinstance(cpu, bool) else 0.0
        return out, cpu_seconds, reply.get("recycle") is True

    def _discard(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc = None


def _cleanup(procs: list[SandboxProcess | None], base: str) -> None:
    """Finalizer: kill a still-running sandbox and delete the folders (also at interpreter exit)."""
    for proc in procs:
        if proc is not None:
            proc.kill()
    launch.remove_folders(base)


_STATUS_OK: dict[str, dict[str, Any]] = {}


def sandbox_status(tier: str = "auto") -> dict[str, Any]:
    """Whether ``tier`` can run here: {"tier": "bwrap"|"weak"|None, "ok": bool, "reason": str}.

    Checks the preconditions, then starts a real sandbox once per process and tier (cached while it works).
    """
    key = (tier or "").strip().lower()
    if key in _STATUS_OK:
        return dict(_STATUS_OK[key])
    try:
        plan = launch.resolve(tier)
    except SandboxUnavailable as exc:
        return {"tier": None, "ok": False, "reason": str(exc)}
    try:
        with PythonRunner("def grade(sample, item):\n    return 1.0\n", tier=tier) as runner:
            result = runner.score([{"output_text": ""}], [{}])[0]
    except SandboxUnavailable as exc:
        return {"tier": None, "ok": False, "reason": str(exc)}
    if result["score"] != 1.0:
        return {"tier": None, "ok": False, "reason": f"probe grader failed: {result['error']}"}
    who = f"uid {plan.uid}" if plan.uid is not None else f"uid {os.geteuid()} (the service's own)"
    reason = f"{plan.tier} sandbox works, launched as {who}"
    if plan.tier == "weak":
        reason += "; weak tier: no namespaces, single-tenant only"
        if plan.uid is None:
            reason += ", and as the service's own uid it can read whatever the service can"
    _STATUS_OK[key] = {"tier": plan.tier, "ok": True, "reason": reason}
    return dict(_STATUS_OK[key])


def self_test(tier: str = "auto") -> dict[str, Any]:
    """Run the canary graders through the real sandbox: {"ok", "escaped": [names], "tier", "details"}."""
    return canaries.run(PythonRunner, tier)
