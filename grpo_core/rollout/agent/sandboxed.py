"""The user's environment code, run in the job's sandbox (grpo_core.sandbox): never in the worker's process.

One persistent sandboxed process per job (the same bubblewrap + seccomp + rlimits as python graders, the same
fail-closed rules); a turn's tool calls of every trajectory go to it in one batch. Each call has its own deadline
inside the sandbox (``tool_timeout_seconds``), and the batch a wall-clock deadline outside it after which the
whole sandbox is killed and started again for the next batch. Whatever goes wrong with a call — it raises, times
out, returns something that is not text or JSON, or takes the sandbox down — becomes that call's ``error``; the
episode goes on and the model reads the error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from grpo_core.errors import UserError
from grpo_core.sandbox import MAX_ERROR_CHARS, ProtocolError, SandboxLimits, SandboxSession, reply_cpu


@dataclass
class CallResult:
    """A tool's text (or ``respond``'s message), or why there is none; ``seconds`` inside the sandbox."""

    value: Any
    error: str | None
    seconds: float


class EnvironmentRunner(SandboxSession):
    """One job's environment source in its sandbox. ``form`` is ``"tools"`` or ``"respond"`` once loaded."""

    mode = "environment"
    what = "environment source"

    def __init__(
        self,
        source: str,
        *,
        tier: str = "auto",
        call_timeout: float = 5.0,
        max_chars: int = 4000,
        limits: SandboxLimits | None = None,
    ) -> None:
        super().__init__(source, tier=tier, limits=limits or SandboxLimits(batch_timeout_seconds=10.0))
        self.call_timeout = call_timeout
        self.max_chars = max_chars

    def load(self) -> tuple[str, list[dict[str, Any]]]:
        """(form, the tool functions as the sandbox described them); UserError when the source does not load."""
        with self._lock:
            if self._ensure() is None:
                raise UserError(self._load_error or "environment source failed to load")
        return str(self.form), list(self.ready.get("tools") or [])

    def call(self, calls: list[dict[str, Any]]) -> list[CallResult]:
        """Run ``calls`` (``{"tool", "arguments", "item"}`` or ``{"respond", "item"}``) in order, one result each."""
        n = len(calls)
        if not n:
            return []
        # every call may use its whole deadline; the batch deadline is the backstop for code that ignores SIGALRM
        timeout = self.limits.batch_timeout_seconds + self.call_timeout * n
        payload = {"calls": calls, "timeout": self.call_timeout, "max_chars": self.max_chars}
        max_reply = 65536 + n * (4 * self.max_chars + 4 * MAX_ERROR_CHARS + 256)
        with self._lock:
            results, why, failure = self._exchange(
                payload, timeout, max_reply, lambda r: self._parse(r, n), "while running this batch of tool calls"
            )
        if results is None:
            if failure == "load":
                raise UserError(why or "environment source failed to load")
            return [CallResult(None, why, 0.0) for _ in calls]
        return results

    def _parse(self, reply: Any, n: int) -> tuple[list[CallResult], float, bool]:
        if not isinstance(reply, dict) or not isinstance(reply.get("results"), list) or len(reply["results"]) != n:
            raise ProtocolError(f"expected {n} results")
        out = []
        for entry in reply["results"]:
            if not isinstance(entry, list) or len(entry) != 3:
                raise ProtocolError("a result is not a [value, error, seconds] triple")
            value, error, seconds = entry
            secs = float(seconds) if isinstance(seconds, int | float) and math.isfinite(seconds) else 0.0
            if error is not None:
                out.append(CallResult(None, str(error)[:MAX_ERROR_CHARS], secs))
            else:
                out.append(CallResult(value, None, secs))
        return out, reply_cpu(reply), reply.get("recycle") is True
