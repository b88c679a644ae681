"""Run user Python reward code in a real sandbox: one persistent sandboxed worker per job and grader.

The code is hostile by assumption (it runs on machines holding model weights and storage credentials), so it
runs in bubblewrap + seccomp + rlimits as an unprivileged uid (grpo_core.sandbox; design and threat
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
from dataclasses import dataclass
from typing import Any, Literal

from grpo_core.sandbox import (
    MAX_ERROR_CHARS,
    GraderError,
    ProtocolError,
    SandboxLimits,
    SandboxSession,
    SandboxUnavailable,
    reply_cpu,
    resolve_tier,
    run_canaries,
)

__all__ = [
    "Batch",
    "GraderError",
    "PythonRunner",
    "SandboxLimits",
    "SandboxUnavailable",
    "sandbox_status",
    "self_test",
]

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


class PythonRunner(SandboxSession):
    """A sandboxed grader for one job and one grader source; never share it across jobs or tenants.

    The sandbox starts lazily on the first :meth:`score` (or eagerly with :meth:`start`). Not for concurrent
    use from several threads (calls are serialised by a lock); use one runner per worker thread instead.
    """

    mode = "grader"
    what = "grader source"

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
            results, why, failure = self._exchange(
                {"samples": samples, "items": items},
                self.limits.timeout_for(n),
                65536 + n * 4 * MAX_ERROR_CHARS,
                lambda reply: self._parse(reply, n),
                "while scoring this batch",
            )
        if results is None:
            return _failed(n, why or "the sandbox failed", failure or "sandbox")
        return Batch(results)

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
        return out, reply_cpu(reply), reply.get("recycle") is True


_STATUS_OK: dict[str, dict[str, Any]] = {}


def sandbox_status(tier: str = "auto") -> dict[str, Any]:
    """Whether ``tier`` can run here: {"tier": "bwrap"|"weak"|None, "ok": bool, "reason": str}.

    Checks the preconditions, then starts a real sandbox once per process and tier (cached while it works).
    """
    key = (tier or "").strip().lower()
    if key in _STATUS_OK:
        return dict(_STATUS_OK[key])
    try:
        plan = resolve_tier(tier)
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
    return run_canaries(PythonRunner, tier)
