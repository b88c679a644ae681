"""Grader templates: ``{{item.x.y}}``, ``{{sample.output_text}}``, ``{{sample.output_json.x}}`` (OpenAI's syntax).

A missing key is an error that names the variable (OpenAI's "invalid variable" error), never an empty string
that would silently score every sample the same.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TEMPLATE = re.compile(r"\{\{\s*([a-zA-Z_][\w.]*)\s*\}\}")


class TemplateError(KeyError):
    """A template names something the sample or the dataset row does not have."""

    def __str__(self) -> str:
        return str(self.args[0])


def make_sample(text: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``sample`` a grader sees: the completion text and, when it is JSON, its parsed value; a multi-turn
    episode adds ``messages`` (the whole conversation) and ``output_tools`` (every tool call the model made)."""
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    return {"output_text": text, "output_json": parsed, **(extra or {})}


def lookup(path: str, sample: dict[str, Any], item: dict[str, Any]) -> Any:
    root, *rest = path.split(".")
    scopes = {"sample": sample, "item": item}
    if root not in scopes:
        raise TemplateError(f"unknown template root {root!r} in {{{{{path}}}}} (use sample.* or item.*)")
    cur: Any = scopes[root]
    for part in rest:
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            raise TemplateError(f"{{{{{path}}}}} is not in the {root}")
    return cur


def render(template: str, sample: dict[str, Any], item: dict[str, Any]) -> str:
    """Fill every ``{{…}}``; values that are not strings are inserted as JSON (numbers as written)."""

    def value(match: re.Match[str]) -> str:
        v = lookup(match.group(1), sample, item)
        return v if isinstance(v, str) else json.dumps(v)

    return _TEMPLATE.sub(value, template)
