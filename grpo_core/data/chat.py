"""Conversations with tools, as one model's chat template renders them, and the exact tokens each new turn adds.

Two things make multi-turn training exact (grpo_core.rollout.agent.episodes):

1. **The model's own tokens are never re-tokenised.** A trajectory is the prompt's ids, then each turn's sampled
   ids as the engine produced them, then the ids of what the template writes between turns (the end of the
   assistant turn, the tool or user message, the next assistant header), then the next sampled ids. Decoding the
   model's text and encoding the whole conversation again could split it into other tokens (BPE is not
   prefix-stable), and the log-probs would then be of tokens the model never sampled.
2. **The tokens between turns come from the template itself.** ``turn_tokens`` renders a fixed two-message
   conversation with and without the new messages and keeps the difference, plus what the template writes after
   an assistant message's end-of-turn token (SmolLM2 and Qwen: ``<|im_end|>`` then ``\\n``; the model stops at
   ``<|im_end|>``). This is the approach of verl's multi-turn rollouts: it holds for every template whose
   rendering of earlier messages does not depend on what follows them.

Tools reach the model in its template's own way when the template renders ``tools`` (Qwen, Llama 3.1, Mistral,
SmolLM3); a template that ignores them (SmolLM2-135M's) gets them as a system message in the Hermes format
(``<tool_call>{"name": …, "arguments": …}</tool_call>``), which is then also the format the calls are parsed in.
This module is torch-free: the API's prompt counter (grpo_core.data.prompt_tokens) applies the same preparation.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

ToolFormat = Literal["hermes", "llama3", "mistral"]
Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool], str]

_PROBE_TOOL = {"type": "function", "function": {"name": "rft_probe_tool_3f9", "parameters": {"type": "object"}}}
_TURN_MARK = "RFT-ASSISTANT-TURN-7c1"


class ChatError(ValueError):
    """A conversation this template cannot render for multi-turn training; says what and why."""


def content_text(content: Any) -> str:
    """OpenAI's message content as text: a string, None (an assistant turn of tool calls only), or content parts
    ``[{"type": "text", "text": …}]`` (joined); other part types (images, audio) are refused."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise ChatError(f"content[{i}] is a {kind!r} part: only text parts are supported")
            texts.append(part["text"])
        return "".join(texts)
    raise ChatError(f"content must be a string, a list of text parts or null, not {type(content).__name__}")


def detect_format(template: str | None) -> ToolFormat:
    """The tool-call format a chat template teaches: Hermes ``<tool_call>`` tags (Qwen 2.5/3, Hermes, SmolLM3, and
    our own injected prompt), Llama 3.1's bare JSON with ``parameters``, or Mistral's ``[TOOL_CALLS]``."""
    text = template or ""
    if "[TOOL_CALLS]" in text:
        return "mistral"
    if "<tool_call>" in text:
        return "hermes"
    if "<|python_tag|>" in text or ("ipython" in text and '"parameters"' in text):
        return "llama3"
    return "hermes"


def tools_system_prompt(tools: Sequence[dict[str, Any]]) -> str:
    """Hermes-format instructions for a template that does not render tools itself."""
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return (
        "You can call functions to help answer. The available functions, one JSON signature per line, are inside "
        f"<tools></tools>:\n<tools>\n{lines}\n</tools>\n\nTo call a function, write a JSON object with its name and "
        'arguments inside <tool_call></tool_call> tags:\n<tool_call>\n{"name": "<function name>", "arguments": '
        "{<arguments as a JSON object>}}\n</tool_call>\nThe result comes back in the next message."
    )


def format_calls(calls: Sequence[dict[str, Any]], fmt: ToolFormat) -> str:
    """Tool calls (OpenAI's ``tool_calls``) as the text a model of ``fmt`` writes them in."""
    objs = []
    for c in calls:
        fn = c.get("function", c)
        args = fn.get("arguments", {})
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        objs.append({"name": fn.get("name"), ("parameters" if fmt == "llama3" else "arguments"): args})
    if fmt == "mistral":
        return "[TOOL_CALLS]" + json.dumps(objs, ensure_ascii=False)
    if fmt == "llama3":
        return "\n".join(json.dumps(o, ensure_ascii=False) for o in objs)
    return "\n".join(f"<tool_call>\n{json.dumps(o, ensure_ascii=False)}\n</tool_call>" for o in objs)


class ChatFormat:
    """How one template renders tool conversations; ``render(messages, tools, add_generation_prompt)`` is the
    template (transformers' ``apply_chat_template`` in the trainer, the sandboxed Jinja in the API)."""

    def __init__(self, render: Render, template: str | None, fmt: ToolFormat | Literal["auto"] = "auto") -> None:
        self._render = render
        self.has_template = template is not None
        self.format: ToolFormat = detect_format(template) if fmt == "auto" else fmt
        self.native_tools = self.has_template and self._renders_tools()
        self._tool_role: str | None = None  # "tool", or "user" for templates that refuse a tool role

    def _renders_tools(self) -> bool:
        try:
            text = self._render([{"role": "user", "content": "x"}], [_PROBE_TOOL], True)
        except Exception:  # a template that raises on tools does not support them
            return False
        return "rft_probe_tool_3f9" in text

    def prepare(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """(messages, tools) to hand the template: contents as text; without native tool support the tools become
        a system message and earlier tool calls text in the model's format."""
        out = []
        for m in messages:
            msg = {k: v for k, v in m.items() if k != "content"}
            msg["content"] = content_text(m.get("content"))
            if not self.native_tools and m.get("tool_calls"):
                calls = format_calls(m["tool_calls"], self.format)
                msg["content"] = f"{msg['content']}\n{calls}" if msg["content"] else calls
                del msg["tool_calls"]
            if not self.native_tools and m.get("role") == "tool" and self.tool_role() == "user":
                msg = {"role": "user", "content": f"<tool_response>\n{msg['content']}\n</tool_response>"}
            out.append(msg)
        if not tools:
            return out, None
        if self.native_tools:
            return out, list(tools)
        instructions = tools_system_prompt(tools)
        if out and out[0].get("role") == "system":
            out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{instructions}"}
        else:
            out.insert(0, {"role": "system", "content": instructions})
        return out, None

    def tool_role(self) -> str:
        """The role tool results are sent with: "tool", unless the template refuses it (then "user")."""
        if self._tool_role is None:
            probe = [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": "y"},
                {"role": "tool", "content": "z"},
            ]
            try:
                self._render(probe, None, True)
                self._tool_role = "tool"
            except Exception:  # a template raises what it likes (jinja's errors, raise_exception) on a tool role
                self._tool_role = "user"
        return self._tool_role

    def prompt(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> str:
        """The first prompt of an episode: the row's conversation and tools, the assistant turn opened."""
        if not self.has_template:
            text = "\n".join(f"{m['role']}: {content_text(m.get('content'))}" for m in messages)
            if tools:
                text = f"system: {tools_system_prompt(tools)}\n{text}"
            return text + "\nassistant:"
        msgs, kw_tools = self.prepare(messages, tools)
        return self._render(msgs, kw_tools, True)

    def between_turns(
        self, new_messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, stop_texts: Sequence[str]
    ) -> str:
        """The text the template writes after the model's end-of-turn token: the rest of the assistant turn, each
        of ``new_messages`` (tool results, an environment's user turn), and the next assistant header.

        ``stop_texts``: the strings of the tokens the model stops on; the model's turn ends with one of them, so the
        template's text up to and including it is already in the trajectory as sampled tokens.
        """
        if not self.has_template:
            return "".join(f"\n{m['role']}: {content_text(m.get('content'))}" for m in new_messages) + "\nassistant:"
        base = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _TURN_MARK}]
        msgs, kw_tools = self.prepare([*base, *new_messages], tools)
        base_msgs = msgs[: len(msgs) - len(new_messages)]
        before = self._render(base_msgs, kw_tools, False)
        after = self._render(msgs, kw_tools, True)
        if not after.startswith(before):
            raise ChatError(
                "the chat template renders an earlier turn differently once a later message follows it, so a "
                "multi-turn trajectory cannot keep the model's own tokens"
            )
        tail = before[before.rfind(_TURN_MARK) + len(_TURN_MARK) :]
        for stop in sorted(stop_texts, key=len, reverse=True):
            if stop and tail.startswith(stop):
                tail = tail[len(stop) :]
                break
        return tail + after[len(before) :]
