"""The job's ``environment`` checked at creation: its source loads in this service's sandbox and its tools match
the rows' ``tools``, so a broken environment is a 422 before any GPU time (grpo_core.rollout.agent)."""

from __future__ import annotations

from typing import Any

from api.core.errors import Unprocessable
from grpo_core.errors import UserError
from grpo_core.rewards.base import GraderEnv
from grpo_core.rewards.python_runner import SandboxUnavailable
from grpo_core.rollout.agent.sandboxed import EnvironmentRunner
from grpo_core.schemas.environment import EnvironmentSpec

ENV = "method.reinforcement.environment"


def check_environment(spec: EnvironmentSpec, rows: list[dict[str, Any]], env: GraderEnv) -> None:
    """Load ``spec``'s source in the sandbox (a syntax error, a failing import, or no tool and no ``respond`` is a
    422 naming the source) and check that every tool the first ``rows`` name is one of its functions."""
    try:
        compile(spec.source, "environment.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise Unprocessable(
            f"environment source has a syntax error at line {exc.lineno}: {exc.msg}", param=f"{ENV}.source"
        ) from None
    try:
        with EnvironmentRunner(spec.source, tier=env.sandbox_tier) as runner:
            form, described = runner.load()
    except SandboxUnavailable as exc:
        raise Unprocessable(
            f"this service cannot run the environment: {exc}", param=ENV, code="environment_unavailable"
        ) from None
    except UserError as exc:
        raise Unprocessable(str(exc), param=f"{ENV}.source") from None
    if form != "tools":
        return
    defined = {t["name"] for t in described}
    for n, row in enumerate(rows, start=1):
        for tool in row.get("tools") or []:
            name = tool.get("function", {}).get("name") if isinstance(tool, dict) else None
            if name not in defined:
                raise Unprocessable(
                    f"training row {n} offers the tool {name!r}, which the environment does not define "
                    f"(it defines: {', '.join(sorted(defined))})",
                    param="training_file",
                )
