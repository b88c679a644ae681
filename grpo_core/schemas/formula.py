"""``calculate_output`` of a multi grader: a tiny arithmetic language, parsed and evaluated by us, never ``eval``.

Grammar (OpenAI's): numbers, sub-grader names, + - * / ^ (power; ** also accepted), unary minus, parentheses,
and the functions min, max, abs, floor, ceil, exp, sqrt, log. Python's parser builds the tree (``mode="eval"``),
then every node is checked against that whitelist before anything is computed; attribute access, subscripts,
calls of anything else, comparisons and names other than the sub-graders are rejected with the reason.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

_FUNCS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
MAX_NODES = 256


class FormulaError(ValueError):
    """calculate_output does not parse, or uses something outside the whitelist."""


def parse_formula(text: str, names: set[str]) -> ast.Expression:
    """The checked tree of ``text``; raises FormulaError naming the offending part."""
    try:  # ^ is power in the formula language; Python would parse it as xor, with the wrong precedence
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"calculate_output does not parse: {exc.msg}") from None
    nodes = list(ast.walk(tree))
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    if len(nodes) > MAX_NODES:
        raise FormulaError(f"calculate_output is too long ({len(nodes)} nodes, at most {MAX_NODES})")
    for node in nodes:
        if isinstance(node, ast.Expression | ast.Load | ast.operator | ast.unaryop):
            if isinstance(node, ast.operator) and type(node) not in _BINOPS:
                raise FormulaError(f"operator {type(node).__name__} is not allowed in calculate_output")
            if isinstance(node, ast.unaryop) and not isinstance(node, ast.USub | ast.UAdd):
                raise FormulaError(f"operator {type(node).__name__} is not allowed in calculate_output")
        elif isinstance(node, ast.BinOp | ast.UnaryOp):
            pass
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise FormulaError(f"only numbers may appear as constants, not {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id in _FUNCS and id(node) not in called and node.id not in names:
                raise FormulaError(f"{node.id} is a function: call it, e.g. {node.id}(a, b)")
            if node.id not in names and node.id not in _FUNCS:
                raise FormulaError(f"unknown name {node.id!r} in calculate_output (sub-graders: {sorted(names)})")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise FormulaError(f"only {', '.join(_FUNCS)} may be called in calculate_output")
            if not node.args:
                raise FormulaError(f"{node.func.id}() needs arguments")
        else:
            raise FormulaError(f"{type(node).__name__} is not allowed in calculate_output")
    return tree


def evaluate_formula(tree: ast.Expression, values: dict[str, float]) -> float:
    """Value of a tree from ``parse_formula`` with the sub-grader ``values``; math errors raise ValueError."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(values[node.id])
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            return float(_BINOPS[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return float(_FUNCS[node.func.id](*(ev(a) for a in node.args)))
        raise FormulaError(f"{type(node).__name__} in a checked formula")  # unreachable after parse_formula

    try:
        out = ev(tree.body)
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        raise ValueError(f"calculate_output failed: {type(exc).__name__}: {exc}") from None
    if not math.isfinite(out):
        raise ValueError(f"calculate_output gave {out}")
    return out
