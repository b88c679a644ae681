"""The parts keep their walls (../shared/DESIGN.md, "Parts and who may import whom"), checked three ways:

- statically, every import statement of every module (function-level ones included) against the forbidden
  arrows below, so a new ``import api`` anywhere under worker/ fails here with the file and line;
- dynamically, in fresh interpreters, what importing a part pulls in transitively (the API and its image stay
  free of torch; the config and schema modules the API validates with stay free of torch);
- as floors: inside every package of api/, worker/, grpo_core/ and runtime/ the sibling folders and modules import
  one way (no two of them, nor any circle of them, import each other), and the top floors of grpo_core/ and api/
  are named (``FLOORS``): a module imports its own floor or the ones below, never one above.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.unit.test_structure import circles

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
    "grpo_core.schemas.pooling",  # which jobs may share a worker: the scheduler decides it as the worker does
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
    "grpo_core.schemas.endpoints",  # a score_model grader's own endpoint, checked at creation as the worker does
    "grpo_core.training_api.spec",  # the training API checks a forward_backward batch before queueing it
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
        "grpo_core.schemas.metrics, grpo_core.schemas.health, grpo_core.schemas.pooling, grpo_core.models.catalog"
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


# ---------------------------------------------------------------- floors: sibling folders import one way

# The floors of the two parts with many rooms, lowest first. Every folder and module directly in the part stands on
# exactly one floor, and imports only from its own floor or those below: a new folder must be placed here.
FLOORS: dict[str, list[set[str]]] = {
    "grpo_core": [
        # what every side of a step stands on: errors, the sandbox, the pure schemas, devices, model folders, rows
        {"errors", "sandbox", "schemas", "hardware", "models", "data"},
        # the sampling side: rollouts drawn and scored, advantages from rewards (prime-rl's orchestrator's side)
        {"rollout", "rewards"},
        # the training side: log-probs, the loss, the update, its state saved and restored, the slot a pool's
        # tenants take turns in and the passes they share
        {"update", "checkpoint", "resident", "joint"},
        # what drives a policy: a run built and its loop, a pool of them in turn, the sampler process, policy
        # sessions and probes
        {"metrics", "policy", "evaluation", "sampler_process", "run", "trainer", "pool", "training_api"},
    ],
    "api": [
        {"core", "db"},  # the kit and the tables: no domain
        {"checkpoints", "files", "fleet", "graders", "models", "secrets", "tenants", "usage", "webhooks"},
        {"billing", "evals", "inference", "jobs", "training_api"},
        {"admin", "main", "reaper"},  # what wires the domains together, above them all
    ],
}


def children(folder: Path) -> set[str]:
    """The modules and sub-packages directly in package ``folder``."""
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return modules | {d.name for d in folder.iterdir() if (d / "__init__.py").is_file()}


def import_targets(path: Path) -> list[tuple[int, str]]:
    """``imports``, plus ``module.name`` for each name a ``from module import name`` takes (it may be a module)."""
    out = imports(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def sibling_imports(folder: Path, root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) -> where, for each child of package ``folder`` (a module, or a sub-package with all it
    holds) that imports another child of it."""
    package = ".".join(folder.relative_to(root).parts)
    names = children(folder)
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(folder.rglob("*.py")):
        src = path.relative_to(folder).parts[0].removesuffix(".py")
        if src == "__init__" or "node_modules" in path.parts:
            continue
        for line, module in import_targets(path):
            dst = module.removeprefix(package + ".").split(".")[0] if module.startswith(package + ".") else None
            if dst is not None and dst != src and dst in names:
                found[(src, dst)].append(f"{path.relative_to(root)}:{line}")
    return found


def packages(part: str, root: Path = ROOT) -> list[Path]:
    """Every package of ``part``, itself first."""
    top = root / part
    inner = (d for d in sorted(top.rglob("*")) if d.is_dir() and (d / "__init__.py").is_file())
    return [top] + [d for d in inner if "node_modules" not in d.parts]


def sibling_circles(folder: Path, root: Path = ROOT) -> list[str]:
    """Each circle among the children of ``folder``, with one import of each arrow in it."""
    edges = sibling_imports(folder, root)
    graph: dict[str, set[str]] = {c: set() for c in children(folder)}
    for src, dst in edges:
        graph[src].add(dst)
    found = []
    for circle in circles(graph):
        arrows = [f"{a} -> {b} ({edges[(a, b)][0]})" for a in circle for b in circle if (a, b) in edges]
        found.append(f"{folder.relative_to(root)}: {', '.join(circle)} import each other: " + "; ".join(arrows))
    return found


def floor_violations(folder: Path, floors: list[set[str]], root: Path = ROOT) -> list[str]:
    """Children of ``folder`` on no floor (or on two), and imports from a floor above the importer's."""
    level = {name: i for i, floor in enumerate(floors) for name in floor}
    found = [f"{folder.relative_to(root)}/{c}: on no floor of FLOORS" for c in sorted(children(folder) - set(level))]
    found += [f"{name}: on two floors" for name in level if sum(name in f for f in floors) > 1]
    for (src, dst), where in sorted(sibling_imports(folder, root).items()):
        if src in level and dst in level and level[dst] > level[src]:
            found.append(f"{src} (floor {level[src]}) imports {dst} (floor {level[dst]}) above it: {where[0]}")
    return found


@pytest.mark.parametrize("part", ["api", "worker", "grpo_core", "runtime"])
def test_sibling_folders_import_one_way(part: str) -> None:
    found = [c for folder in packages(part) for c in sibling_circles(folder)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("part", sorted(FLOORS))
def test_each_folder_imports_only_its_floor_and_those_below(part: str) -> None:
    found = floor_violations(ROOT / part, FLOORS[part])
    assert not found, "\n".join(found)


def test_the_floor_checks_see_a_planted_import(tmp_path: Path) -> None:
    """A sub-package that imports its importer (however deep, however spelled) is a circle; an import from a
    floor above is named with its file and line."""
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "low" / "__init__.py"):
        init.write_text("")
    (pkg / "high.py").write_text("from pkg.low.deep import x\n")
    (pkg / "low" / "deep.py").write_text("x = 1\ndef f():\n    from pkg import high\n")
    assert sibling_circles(pkg, tmp_path) == [
        "pkg: high, low import each other: high -> low (pkg/high.py:1); low -> high (pkg/low/deep.py:3)"
    ]
    assert floor_violations(pkg, [{"low"}, {"high"}], tmp_path) == [
        "low (floor 0) imports high (floor 1) above it: pkg/low/deep.py:3"
    ]
    assert floor_violations(pkg, [{"low"}], tmp_path) == ["pkg/high: on no floor of FLOORS"]
