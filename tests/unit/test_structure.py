"""The house a newcomer walks (issue: "one house"), as executable checks over every import statement:

- no import circle among the modules of api/, worker/, runtime/ and grpo_core/: every ``import`` counts, those in
  a function body and under ``TYPE_CHECKING`` included (a function-level import is how a circle hides);
- no module takes another module's ``_private`` name, by ``from m import _name`` or as ``m._name`` on an imported
  module: what another module needs is public, named and documented where it lives.

tests/unit/test_layering.py keeps the walls between the parts; this file keeps each part's own floor plan.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("api", "worker", "runtime", "grpo_core")
CHECKED_FOR_PRIVATE = (*PARTS, "rft_cli", "scripts", "bench")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules(parts: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for part in parts:
        for path in sorted((ROOT / part).rglob("*.py")):
            if "node_modules" not in path.parts:
                out[module_name(path)] = path
    return out


def imported(path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names taken from it) for every absolute import; ``from pkg import mod`` names the module."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [a.name for a in node.names]
            submodules = [n for n in names if f"{node.module}.{n}" in known]
            for n in submodules:
                yield node.lineno, f"{node.module}.{n}", []
            yield node.lineno, node.module, [n for n in names if n not in submodules]


def import_graph(known: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``known`` it imports (a package's ``__init__`` is an edge only when named)."""
    graph: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in known.items():
        for _, target, _ in imported(path, known):
            if target in known and target != mod:
                graph[mod].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def private_uses(known: dict[str, Path], ours: dict[str, Path]) -> list[str]:
    found = []
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}  # local name -> one of our modules
        for line, target, names in imported(path, ours):
            if target == mod or target not in ours:
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    found.append(f"{path.relative_to(ROOT)}:{line}: takes {target}.{n}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in ours:
                        aliases[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if f"{node.module}.{a.name}" in ours:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != mod
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: uses {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_import_circle() -> None:
    found = circles(import_graph(modules(PARTS)))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_module_takes_another_modules_private_name() -> None:
    ours = modules((*CHECKED_FOR_PRIVATE, "tests"))
    found = private_uses(modules(CHECKED_FOR_PRIVATE), ours)
    assert not found, "\n".join(found)


def test_the_checks_see_what_they_claim(tmp_path: Path) -> None:
    """A function-level import closes a circle; ``from m import _x`` and ``m._x`` are both found."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("_x = 1\n")
    (pkg / "n.py").write_text("def f():\n    from pkg.m import _x\n    from pkg import m\n    return m._x\n")
    known = {"pkg.m": pkg / "m.py", "pkg.n": pkg / "n.py"}
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert private_uses(known, known) == ["pkg/n.py:2: takes pkg.m._x", "pkg/n.py:4: uses pkg.m._x"]
        assert import_graph(known) == {"pkg.m": set(), "pkg.n": {"pkg.m"}}
    finally:
        ROOT = saved


def test_each_contract_is_written_once() -> None:
    """The worker API's refusal codes, a run's outcomes and the resume reasons are enums: no module spells one of
    their values as a string literal of its own (which is how a raise and its match drift apart)."""
    from api.db.models import ResumeReason
    from runtime.internal import FinishStatus, Refusal

    defined_in = {
        "runtime/internal.py": {*Refusal, FinishStatus.preempted},
        "api/db/models/jobs.py": set(ResumeReason),
    }
    values = {str(v) for group in defined_in.values() for v in group}
    found = []
    for path in modules(("api", "worker", "runtime")).values():
        rel = str(path.relative_to(ROOT))
        own = {str(v) for v in defined_in.get(rel, set())}
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Constant) and node.value in values and node.value not in own:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, "\n".join(found)
