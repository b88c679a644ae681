"""Tool calls in a model's turn: parsed in the model's own format and validated against the tools' schemas.

A malformed call (text that opens a call but is not valid JSON, an unknown tool, arguments that fail the schema)
is not dropped silently: it becomes an error message the model reads in its next turn, and it is counted in the
step's metrics (``tool_call_errors``), because a model learning to call tools mostly learns from those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_core.data.chat import ToolFormat

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


@dataclass
class ParsedTurn:
    """One assistant turn: its text without the calls, the well-formed calls (OpenAI's ``tool_calls`` shape, each
    with its parsed ``arguments`` dict beside the JSON string), and one message per malformed call."""

    content: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _objects(fmt: ToolFormat, text: str) -> tuple[str, list[Any], list[str]]:
    """(the text outside the calls, the decoded call objects, errors for call text that is not JSON)."""
    errors: list[str] = []
    if fmt == "hermes":
        found: list[Any] = []
        for body in _HERMES.findall(text):
            try:
                found.append(json.loads(body))
            except ValueError as exc:
                errors.append(f"the text inside <tool_call></tool_call> is not JSON ({exc})")
        outside = _HERMES.sub("", text)
        if "<tool_call>" in outside:
            errors.append("a <tool_call> was opened but never closed with </tool_call>")
            outside = outside[: outside.index("<tool_call>")]
        return outside.strip(), found, errors
    if fmt == "mistral":
        head, marker, rest = text.partition("[TOOL_CALLS]")
        if not marker:
            return text.strip(), [], []
        try:
            value = json.loads(rest.strip())
        except ValueError as exc:
            return head.strip(), [], [f"the text after [TOOL_CALLS] is not a JSON list ({exc})"]
        return head.strip(), value if isinstance(value, list) else [value], []
    # llama3: the whole turn is one JSON object (or several, one per line), optionally after <|python_tag|>
    body = text.replace("<|python_tag|>", "").strip()
    if not body.startswith("{"):
        return text.strip(), [], []
    objs = []
    for line in [ln for ln in body.split("\n") if ln.strip()] if body.count("\n") else [body]:
        try:
            objs.append(json.loads(line))
        except ValueError as exc:
            return "", objs, [f"the tool call is not valid JSON ({exc})"]
    return "", objs, []


def _validate(obj: Any, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """(name, arguments) of one decoded call, or ValueError saying what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError(f"a tool call must be a JSON object, got {type(obj).__name__}")
    name = obj.get("name")
    if not isinstance(name, str):
        raise ValueError('a tool call needs a string "name"')
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise ValueError(f"there is no tool named {name!r} (tools: {known})")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise ValueError(f"the arguments of {name!r} are not a JSON object ({exc})") from None
    if not isinstance(args, dict):
        raise ValueError(f"the arguments of {name!r} must be a JSON object, got {type(args).__name__}")
    schema = tools[name].get("parameters")
    if isinstance(schema, dict) and schema:
        from jsonschema import Draft202012Validator

        problem = next(iter(Draft202012Validator(schema).iter_errors(args)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
            raise ValueError(f"the arguments of {name!r} do not match its schema: {where}: {problem.message}")
    return name, args


def parse_turn(text: str, fmt: ToolFormat, tools: Sequence[dict[str, Any]], call_id_prefix: str) -> ParsedTurn:
    """The calls in an assistant turn's ``text`` (special tokens kept, the end-of-turn token removed), checked
    against ``tools`` (OpenAI function tools). Call ids are ``{call_id_prefix}-{n}``."""
    by_name = {t["function"]["name"]: t["function"] for t in tools if isinstance(t.get("function"), dict)}
    content, objs, errors = _objects(fmt, text)
    turn = ParsedTurn(content=content, errors=list(errors))
    for obj in objs:
        try:
            name, args = _validate(obj, by_name)
        except ValueError as exc:
            turn.errors.append(str(exc))
            continue
        turn.calls.append(
            {
                "id": f"{call_id_prefix}-{len(turn.calls)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                "parsed_arguments": args,
            }
        )
    return turn


def schemas_from_signatures(described: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function tools for the environment's tool functions (as the sandbox described them), for rows that
    carry no ``tools``: each parameter but ``item`` (the dataset row, passed by the service), typed from its
    annotation where that is a plain JSON type, required when it has no default."""
    json_types = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array"}
    json_types |= {"dict": "object"}
    out = []
    for tool in described:
        props: dict[str, Any] = {}
        required = []
        for p in tool.get("params", []):
            if p["name"] == "item":
                continue
            kind = json_types.get(str(p.get("annotation") or ""))
            props[p["name"]] = {"type": kind} if kind else {}
            if p.get("required"):
                required.append(p["name"])
        params = {"type": "object", "properties": props, "required": required}
        fn = {"name": tool["name"], "description": tool.get("doc", ""), "parameters": params}
        out.append({"type": "function", "function": fn})
    return out
