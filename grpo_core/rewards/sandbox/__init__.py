"""The sandbox that runs user Python reward code (the public entry point is grpo_core.rewards.python_runner).

* ``launch``   — tier policy (bwrap / weak / fail closed), the sandbox interpreter, the bwrap command line.
* ``process``  — one sandbox process: pipes, deadlines, capped stderr, kill.
* ``worker``   — runs *inside* the sandbox on its own interpreter: rlimits, seccomp, then the user's code.
* ``seccomp``  — the syscall filter (hand-written BPF, stdlib only, copied into the sandbox with ``worker``).
* ``canaries`` — hostile graders for ``self_test()``.
* ``limits``   — SandboxLimits and the errors.
"""

from grpo_core.rewards.sandbox.limits import GraderError, SandboxLimits, SandboxUnavailable

__all__ = ["GraderError", "SandboxLimits", "SandboxUnavailable"]
