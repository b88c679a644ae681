"""The parts keep their walls (../shared/DESIGN.md, "Parts and who may import whom"), checked two ways:

- statically, every import statement of every module (function-level ones included) against the forbidden
  arrows below, so a new ``import api`` anywhere under worker/ fails here with the file and line;
- dynamically, in fresh interpreters, what importing a part pulls in transitively (the API and its image stay
  free of torch; the config and schema modules the API validates with stay free of torch).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# part -> top-level packages it must never import
FORBIDDEN: dict[str, set[str]] = {
    "grpo_core": {"api", "worker", "runtime", "rft_cli", "fastapi", "starlette", "celery", "sqlalchemy", "boto3"},
    # the worker is glue (claim, fetch, call grpo_core, post): it loads no model and samples nothing itself
    "worker": {"api", "fastapi", "starlette", "sqlalchemy", "alembic", "transformers", "peft", "vllm"},
    "runtime": {"api", "worker", "rft_cli", "fastapi", "starlette", "sqlalchemy", "celery", "torch", "transformers"},
    "api": {"worker", "torch", "transformers", "peft", "vllm"},
    "rft_cli": {"api", "worker", "runtime", "grpo_core", "fastapi", "sqlalchemy", "torch"},
}
# The API validates jobs with grpo_core's pure schemas and runs graders in its pre-flight; never its training code.
API_MAY_USE = {
    "grpo_core.rollout.agent.sandboxed",  # the job's environment loaded in the sandbox at creation, as graders are
    "grpo_core.schemas.environment",
    "grpo_core.schemas.config",
    "grpo_core.data.rows",
    "grpo_core.models.catalog",
    "grpo_core.models.files",
    "grpo_core.schemas.presets",  # pure data: the recipes and where a learning rate came from
    "grpo_core.data.prompt_tokens",
    "grpo_core.evaluation.readiness",
    "grpo_core.schemas.metrics",
    "grpo_core.errors",
    "grpo_core.rewards.base",
    "grpo_core.rewards.graders",
    "grpo_core.rewards.judge",
    "grpo_core.rewards.python_runner",
    "grpo_core.schemas.graders",
    "grpo_core.primitives.spec",  # the training API checks a forward_backward batch before queueing it
    "grpo_core.rewards.templates",
}


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in a file, wherever it stands."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


# The worker calls grpo_core's entry points (grpo_core.policy, the trainer, grpo_core.evaluation); sampling is
# theirs: the engines, the agent loop and the batch sampler stay behind them.
WORKER_MAY_NOT_USE = "grpo_core.rollout"


def violations(part: str) -> list[str]:
    found = []
    for path in sorted((ROOT / part).rglob("*.py")):
        for line, module in imports(path):
            where = f"{path.relative_to(ROOT)}:{line}: imports {module}"
            if module.split(".")[0] in FORBIDDEN[part]:
                found.append(where)
            elif part == "api" and module.startswith("grpo_core.") and module not in API_MAY_USE:
                found.append(where + " (grpo_core's training code)")
            elif part == "worker" and (module + ".").startswith(WORKER_MAY_NOT_USE + "."):
                found.append(where + " (grpo_core's sampling: call grpo_core.policy or grpo_core.evaluation)")
    return found


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_forbidden_import(part: str) -> None:
    assert not violations(part), "\n".join(violations(part))


def test_the_scan_sees_function_level_imports(tmp_path: Path) -> None:
    """An import hidden in a function body is found (the worker used to import api.core.settings lazily too)."""
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from api.core.settings import get_settings\n    import api\n")
    assert imports(sample) == [(2, "api.core.settings"), (3, "api")]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return {m.split(".")[0] for m in out.split()} | set(out.split())


def test_config_and_schemas_do_not_import_torch() -> None:
    mods = _modules_after(
        "import grpo_core.schemas.config, grpo_core.schemas.graders, grpo_core.rewards.base, "
        "grpo_core.schemas.metrics, grpo_core.schemas.health, grpo_core.models.catalog"
    )
    assert not mods & {"torch", "transformers", "peft"}


def test_runtime_imports_no_framework() -> None:
    mods = _modules_after("import runtime.settings, runtime.storage, runtime.internal, runtime.keys, runtime.queue")
    assert "pydantic_settings" in mods
    assert not mods & {"torch", "transformers", "fastapi", "starlette", "sqlalchemy", "celery", "api", "worker"}


def test_grpo_core_imports_no_service_framework() -> None:
    mods = _modules_after(
        "import grpo_core.trainer, grpo_core.checkpoint, grpo_core.rewards.graders, grpo_core.data.rows, "
        "grpo_core.models.catalog"
    )
    assert "torch" in mods  # the check really loaded the training stack
    assert not mods & {"fastapi", "celery", "sqlalchemy", "boto3", "api", "worker", "runtime"}


def test_worker_imports_nothing_of_the_api() -> None:
    mods = _modules_after("import worker.tasks, worker.runner, worker.reporting")
    assert "celery" in mods
    assert not mods & {"api", "fastapi", "sqlalchemy"}


def test_api_does_not_import_worker_or_torch() -> None:
    mods = _modules_after("import api.main")
    assert "fastapi" in mods
    assert not mods & {"worker", "torch", "transformers"}


def test_inspecting_a_model_and_counting_its_prompts_loads_no_torch(tiny_model_dir: Path) -> None:
    """Registration and the prompt-length check run in the API: files, headers and tokenizers only."""
    mods = _modules_after(
        "from pathlib import Path; from grpo_core.models.files import inspect_model_folder; "
        "from grpo_core.data.prompt_tokens import PromptCounter; "
        f"p = Path({str(tiny_model_dir)!r}); inspect_model_folder(p); "
        "list(PromptCounter(p).counts([{'prompt': 'x'}]))"
    )
    assert "tokenizers" in mods and not mods & {"torch", "transformers"}


# The sandbox is a part of its own (grpo_core/sandbox): the interpreter inside it has the standard library only, and
# the code that runs there (worker.py, with seccomp.py copied beside it as ``seccomp``) must never reach the
# training stack. Outside it, grpo_core uses the package's public names (grpo_core/sandbox/__init__.py), never a
# module of it.
SANDBOX = "grpo_core.sandbox"
SANDBOX_MAY_IMPORT = set(sys.stdlib_module_names) | {"seccomp"}  # seccomp: its own filter module, copied in


def sandbox_violations() -> list[str]:
    found = []
    for path in sorted((ROOT / "grpo_core" / "sandbox").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: a relative import (name the module)")
        for line, module in imports(path):
            inside = module == SANDBOX or module.startswith(SANDBOX + ".")
            if not inside and module.split(".")[0] not in SANDBOX_MAY_IMPORT:
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    return found


def test_the_sandbox_imports_only_itself_and_the_standard_library() -> None:
    assert not sandbox_violations(), "\n".join(sandbox_violations())


def test_importing_the_sandbox_loads_only_itself_and_the_standard_library() -> None:
    """In a fresh interpreter: every module of the sandbox, and what they pull in beyond the interpreter's start."""
    names = sorted(p.stem for p in (ROOT / "grpo_core" / "sandbox").glob("*.py") if p.stem != "__init__")
    before = _modules_after("")
    loaded = _modules_after("import " + ", ".join(f"{SANDBOX}.{n}" for n in names)) - before
    assert {f"{SANDBOX}.{n}" for n in names} <= loaded  # the check really imported them
    ours = {m for m in loaded if m == "grpo_core" or m.startswith("grpo_core.")}
    assert ours <= {"grpo_core", SANDBOX} | {f"{SANDBOX}.{n}" for n in names}, sorted(ours)
    assert {m.split(".")[0] for m in loaded} <= SANDBOX_MAY_IMPORT | {"grpo_core"}, sorted(loaded)


def sandbox_modules_used(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every module of the sandbox that ``path`` imports: ``import grpo_core.sandbox.x``,
    ``from grpo_core.sandbox.x import ...`` or ``from grpo_core.sandbox import x``."""
    inner = {p.stem for p in (ROOT / "grpo_core" / "sandbox").glob("*.py")} - {"__init__"}
    found = [(line, m) for line, m in imports(path) if m.startswith(SANDBOX + ".")]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == SANDBOX and not node.level:
            found += [(node.lineno, f"{SANDBOX}.{a.name}") for a in node.names if a.name in inner]
    return found


def test_the_sandbox_is_used_through_its_public_names() -> None:
    found = []
    for part in ("grpo_core", "worker", "api", "runtime", "rft_cli", "scripts", "bench"):
        for path in sorted((ROOT / part).rglob("*.py")):
            if path.is_relative_to(ROOT / "grpo_core" / "sandbox") or "node_modules" in path.parts:
                continue
            found += [f"{path.relative_to(ROOT)}:{line}: imports {m}" for line, m in sandbox_modules_used(path)]
    assert not found, "use grpo_core.sandbox's public names (its __all__):\n" + "\n".join(found)


def test_the_sandbox_checks_see_what_they_claim(tmp_path: Path) -> None:
    """A module of the sandbox is found however it is imported; the package's own names are not."""
    sample = tmp_path / "m.py"
    sample.write_text(
        "from grpo_core.sandbox import launch, SandboxSession\n"
        "import grpo_core.sandbox.process\n"
        "def f():\n    from grpo_core.sandbox.session import reply_cpu\n"
    )
    assert sorted(sandbox_modules_used(sample)) == [
        (1, "grpo_core.sandbox.launch"),
        (2, "grpo_core.sandbox.process"),
        (4, "grpo_core.sandbox.session"),
    ]
