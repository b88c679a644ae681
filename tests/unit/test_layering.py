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
    "worker": {"api", "fastapi", "starlette", "sqlalchemy", "alembic"},
    "runtime": {"api", "worker", "rft_cli", "fastapi", "starlette", "sqlalchemy", "celery", "torch", "transformers"},
    "api": {"worker", "torch", "transformers", "peft", "vllm"},
    "rft_cli": {"api", "worker", "runtime", "grpo_core", "fastapi", "sqlalchemy", "torch"},
}
# The API validates jobs with grpo_core's pure schemas and runs graders in its pre-flight; never its training code.
API_MAY_USE = {
    "grpo_core.agent.sandboxed",  # the job's environment loaded in the sandbox at creation, as graders are
    "grpo_core.agent.schemas",
    "grpo_core.config",
    "grpo_core.data",
    "grpo_core.models",
    "grpo_core.model_files",
    "grpo_core.presets",  # pure data: the recipes and where a learning rate came from
    "grpo_core.prompt_tokens",
    "grpo_core.readiness",
    "grpo_core.metrics_schema",
    "grpo_core.errors",
    "grpo_core.rewards.base",
    "grpo_core.rewards.graders",
    "grpo_core.rewards.judge",
    "grpo_core.rewards.python_runner",
    "grpo_core.rewards.schemas",
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


def violations(part: str) -> list[str]:
    found = []
    for path in sorted((ROOT / part).rglob("*.py")):
        for line, module in imports(path):
            where = f"{path.relative_to(ROOT)}:{line}: imports {module}"
            if module.split(".")[0] in FORBIDDEN[part]:
                found.append(where)
            elif part == "api" and module.startswith("grpo_core.") and module not in API_MAY_USE:
                found.append(where + " (grpo_core's training code)")
    return found


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_forbidden_import(part: str) -> None:
    assert not violations(part), "\n".join(violations(part))


def test_the_scan_sees_function_level_imports(tmp_path: Path) -> None:
    """An import hidden in a function body is found (the worker used to import api.settings lazily too)."""
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from api.settings import get_settings\n    import api\n")
    assert imports(sample) == [(2, "api.settings"), (3, "api")]


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
        "import grpo_core.config, grpo_core.rewards.schemas, grpo_core.rewards.base, grpo_core.metrics_schema, "
        "grpo_core.models"
    )
    assert not mods & {"torch", "transformers", "peft"}


def test_runtime_imports_no_framework() -> None:
    mods = _modules_after("import runtime.settings, runtime.storage, runtime.internal, runtime.keys, runtime.queue")
    assert "pydantic_settings" in mods
    assert not mods & {"torch", "transformers", "fastapi", "starlette", "sqlalchemy", "celery", "api", "worker"}


def test_grpo_core_imports_no_service_framework() -> None:
    mods = _modules_after(
        "import grpo_core.trainer, grpo_core.checkpoint, grpo_core.rewards.graders, grpo_core.data, grpo_core.models"
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
        "from pathlib import Path; from grpo_core.model_files import inspect_model_folder; "
        "from grpo_core.prompt_tokens import PromptCounter; "
        f"p = Path({str(tiny_model_dir)!r}); inspect_model_folder(p); "
        "list(PromptCounter(p).counts([{'prompt': 'x'}]))"
    )
    assert "tokenizers" in mods and not mods & {"torch", "transformers"}
