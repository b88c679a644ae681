"""The python-grader sandbox's boot self-test: run once when the worker starts, consulted before every job.

At start the worker runs the canary graders (grpo_core.rewards.python_runner.self_test: network, sockets,
secrets, /etc/shadow, writes, fork/exec, ptrace, memory and time bombs) through the configured tier and logs the
active tier. If any canary escapes, or no tier is available, python graders are refused with that reason; the
other graders keep working. The result is held in this module, so the prefork pool's children inherit it.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)
_report: dict[str, Any] | None = None


def run_self_test(tier: str) -> dict[str, Any]:
    """Run the canaries now and remember the outcome (called from the worker's init signal)."""
    global _report
    from grpo_core.rewards.python_runner import self_test

    try:
        report = self_test(tier)
    except Exception as exc:  # no tier at all (fail-closed) or the sandbox cannot start
        report = {"ok": False, "tier": None, "escaped": [], "reason": f"{type(exc).__name__}: {exc}"}
    _report = {k: report.get(k) for k in ("ok", "tier", "escaped", "reason")}
    if _report["ok"]:
        log.info("python-grader sandbox: tier %s, self-test passed (%s)", _report["tier"], _report["reason"])
    else:
        log.error("python-grader sandbox unusable, python graders refused: %s", _report)
    return _report


def python_graders_allowed(tier: str) -> tuple[bool, str]:
    """(allowed, a sentence for the job's events) — runs the self-test if this process has not yet."""
    report = _report or run_self_test(tier)
    if report["ok"]:
        return True, f"Python graders run in the {report['tier']} sandbox (boot self-test: {report['reason']})"
    escaped = f"; canaries escaped: {', '.join(report['escaped'])}" if report.get("escaped") else ""
    return False, f"python graders are refused on this worker: sandbox self-test failed: {report['reason']}{escaped}"
