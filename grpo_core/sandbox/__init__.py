"""The sandbox that runs user code (python graders, tool environments): a part of its own, behind a wall.

It imports nothing of grpo_core outside this package and nothing beyond the standard library (the sandbox's
interpreter has neither torch nor grpo_core; ``worker`` and ``seccomp`` are copied into it), and the rest of
grpo_core uses it through the names below only (tests/unit/test_layering.py checks both).

* ``launch``   — tier policy (bwrap / weak / fail closed), the sandbox interpreter, the bwrap command line.
* ``process``  — one sandbox process: pipes, deadlines, capped stderr, kill.
* ``session``  — one job's user source in one persistent sandbox process: start, check, exchange, recycle.
* ``worker``   — runs *inside* the sandbox on its own interpreter: rlimits, seccomp, then the user's code.
* ``seccomp``  — the syscall filter (hand-written BPF, stdlib only, copied into the sandbox with ``worker``).
* ``canaries`` — hostile graders for ``self_test()``.
* ``limits``   — SandboxLimits and the errors.

Public names: ``SandboxSession`` (what a kind of user code subclasses: grpo_core.rewards.python_runner,
grpo_core.rollout.agent.sandboxed), the ``MAX_ERROR_CHARS`` and ``reply_cpu`` its subclasses read replies with,
``ProtocolError`` (a reply that breaks the protocol), ``SandboxLimits``, ``GraderError``, ``SandboxUnavailable``,
``resolve_tier`` (which tier runs here under a policy, and as whom: a ``LaunchPlan``) and ``run_canaries`` (the
canaries through a runner class, for a self-test).
"""

from grpo_core.sandbox.canaries import run as run_canaries
from grpo_core.sandbox.launch import LaunchPlan
from grpo_core.sandbox.launch import resolve as resolve_tier
from grpo_core.sandbox.limits import GraderError, SandboxLimits, SandboxUnavailable
from grpo_core.sandbox.process import ProtocolError
from grpo_core.sandbox.session import MAX_ERROR_CHARS, SandboxSession, reply_cpu

__all__ = [
    "MAX_ERROR_CHARS",
    "GraderError",
    "LaunchPlan",
    "ProtocolError",
    "SandboxLimits",
    "SandboxSession",
    "SandboxUnavailable",
    "reply_cpu",
    "resolve_tier",
    "run_canaries",
]
