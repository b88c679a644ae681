"""Dataset rows -> prompt strings, and the order prompts are visited in.

A row is a JSON object with either ``prompt`` (a string) or ``messages`` (a chat list, as OpenAI sends it: content
a string or text parts, earlier assistant turns with ``tool_calls``, ``tool`` results), and optionally ``tools``
(OpenAI function tools, for jobs with an environment: grpo_core.rollout.agent); every other column is kept and handed to
the graders as ``item``. When the tokenizer has a chat template, a ``prompt`` string is sent
as one user message and the assistant turn is opened (``add_generation_prompt``), so an instruct model answers
the way it was tuned to; without a template the raw text is the prompt.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from grpo_core.data.chat import ChatFormat, ToolFormat


class RowError(ValueError):
    """A dataset line that is not a usable training row; ``line`` is 1-based."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def check_row(obj: Any, line: int) -> dict[str, Any]:
    """Validate one parsed JSONL value as a training row (the rule the API applies at upload)."""
    if not isinstance(obj, dict):
        raise RowError(line, f"expected a JSON object, got {type(obj).__name__}")
    if "prompt" in obj:
        if not isinstance(obj["prompt"], str) or not obj["prompt"].strip():
            raise RowError(line, "'prompt' must be a non-empty string")
    elif "messages" in obj:
        msgs = obj["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise RowError(line, "'messages' must be a non-empty list")
        for i, m in enumerate(msgs):
            _check_message(m, i, line)
    else:
        raise RowError(line, "a row needs a 'prompt' string or a 'messages' list")
    if "tools" in obj:
        _check_tools(obj["tools"], line)
    return obj


def _check_message(m: Any, i: int, line: int) -> None:
    """One chat message: a string role; content a string, text parts, or null on an assistant turn of tool calls."""
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        raise RowError(line, f"messages[{i}] must be an object with a string 'role'")
    calls = m.get("tool_calls")
    if calls is not None:
        if m["role"] != "assistant" or not isinstance(calls, list):
            raise RowError(line, f"messages[{i}].tool_calls must be a list on an assistant message")
        for k, c in enumerate(calls):
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise RowError(line, f"messages[{i}].tool_calls[{k}] needs a function with a string 'name'")
    content = m.get("content")
    if content is None and calls:
        return
    if isinstance(content, str):
        return
    if isinstance(content, list) and content:
        for k, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise RowError(line, f"messages[{i}].content[{k}] must be a text part {{'type': 'text', 'text': …}}")
        return
    raise RowError(line, f"messages[{i}].content must be a string or a list of text parts")


def _check_tools(tools: Any, line: int) -> None:
    """OpenAI function tools: ``[{"type": "function", "function": {"name", "parameters"?}}]``."""
    if not isinstance(tools, list):
        raise RowError(line, "'tools' must be a list of function tools")
    for k, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict):
            raise RowError(line, f"tools[{k}] must be {{'type': 'function', 'function': {{...}}}}")
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise RowError(line, f"tools[{k}].function needs a string 'name'")
        if "parameters" in fn and not isinstance(fn["parameters"], dict):
            raise RowError(line, f"tools[{k}].function.parameters must be a JSON schema object")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                rows.append(check_row(json.loads(line), n))
    return rows


def prompt_text(row: dict[str, Any], tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None) -> str:
    """The exact text fed to the model for ``row`` (rows are checked at upload: ``prompt`` is a string,
    ``messages`` a list of role/content turns). ``chat_template_kwargs`` (the job's) become template variables.
    grpo_core.data.prompt_tokens renders the same text without transformers, for the API's count. A row with ``tools``,
    content parts or tool turns is rendered by grpo_core.data.chat (tools as the template shows them, or as a
    system message when it does not)."""
    kw = chat_template_kwargs or {}
    has_template = getattr(tokenizer, "chat_template", None) is not None
    if needs_chat_format(row):
        chat = chat_format(tokenizer, json.dumps(kw, sort_keys=True))
        return chat.prompt(row.get("messages") or [{"role": "user", "content": row["prompt"]}], row.get("tools"))
    if "messages" in row:
        if not has_template:
            return "\n".join(f"{m['role']}: {m['content']}" for m in row["messages"]) + "\nassistant:"
        return str(tokenizer.apply_chat_template(row["messages"], tokenize=False, add_generation_prompt=True, **kw))
    if has_template:
        turn = [{"role": "user", "content": row["prompt"]}]
        return str(tokenizer.apply_chat_template(turn, tokenize=False, add_generation_prompt=True, **kw))
    return str(row["prompt"])


@functools.lru_cache(maxsize=8)
def chat_format(tokenizer: Any, kw_json: str, fmt: ToolFormat | Literal["auto"] = "auto") -> ChatFormat:
    """The tokenizer's template (with the job's template variables, as JSON) as grpo_core.data.chat sees it,
    built once per tokenizer, variables and tool-call format ``fmt`` (it renders probes to learn whether the template
    shows tools)."""
    from grpo_core.data.chat import ChatFormat

    kw = json.loads(kw_json)

    def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
        return str(
            tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=gen, **kw)
        )

    return ChatFormat(render, getattr(tokenizer, "chat_template", None), fmt)


def needs_chat_format(row: dict[str, Any]) -> bool:
    """Whether ``row`` has more than plain string turns: tools, content parts, tool calls or tool results."""
    if row.get("tools"):
        return True
    return any(
        not isinstance(m.get("content"), str) or "tool_calls" in m or m.get("role") == "tool"
        for m in row.get("messages") or []
    )


def batches(n_rows: int, batch_size: int, seed: int, start_step: int = 0) -> Iterator[list[int]]:
    """Endless row-index batches: each epoch is a fresh permutation seeded by (seed, epoch).

    Batches never straddle epochs (a short last batch is kept), so step k's prompts are a pure function of
    (n_rows, batch_size, seed, k) — what exact resume needs.
    """
    per_epoch = -(-n_rows // batch_size)
    step = start_step
    while True:
        epoch, k = divmod(step, per_epoch)
        order = list(range(n_rows))
        random.Random(f"{seed}:{epoch}").shuffle(order)
        yield order[k * batch_size : (k + 1) * batch_size]
        step += 1


def take(rows: list[dict[str, Any]], idx: Iterable[int]) -> list[dict[str, Any]]:
    return [rows[i] for i in idx]
