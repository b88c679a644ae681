"""Prompt token counts from a model's tokenizer files alone: no torch, no transformers (the API counts prompts when
a job is created, and the API never imports the training stack).

The text is rendered the way transformers' ``apply_chat_template`` renders it (the same sandboxed Jinja
environment: ``trim_blocks``, ``lstrip_blocks``, the ``tojson`` override, ``raise_exception``, ``strftime_now``,
the special tokens as variables) and encoded with the ``tokenizers`` library without special tokens, as
grpo_core.trainer counts before it trains. tests/unit/test_prompt_tokens.py checks the counts against
transformers' on real rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from grpo_core.data.chat import ChatFormat
from grpo_core.data.rows import needs_chat_format


class PromptCounter:
    """Counts prompt tokens for rows of a training file, for the tokenizer in ``folder``."""

    def __init__(self, folder: Path, chat_template_kwargs: dict[str, Any] | None = None) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tc_path = folder / "tokenizer_config.json"
        self._tc: dict[str, Any] = json.loads(tc_path.read_text()) if tc_path.is_file() else {}
        template = self._tc.get("chat_template")
        jinja_file = folder / "chat_template.jinja"
        if jinja_file.is_file():
            template = jinja_file.read_text()
        if isinstance(template, list):  # named templates: the default one
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        self.template: str | None = template if isinstance(template, str) else None
        # the template's variables besides the messages: the special tokens, then the job's chat_template_kwargs
        self.context = {**self._special_tokens(), **(chat_template_kwargs or {})}

    @cached_property
    def _compiled(self) -> Any:
        import jinja2
        from jinja2 import nodes
        from jinja2.ext import Extension, loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        class Generation(Extension):
            """``{% generation %}…{% endgeneration %}`` (assistant-mask templates): renders its body."""

            tags = {"generation"}

            def parse(self, parser: Any) -> Any:
                lineno = next(parser.stream).lineno
                body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
                return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

            def _body(self, caller: Any) -> str:
                return str(caller())

        def raise_exception(message: str) -> None:
            raise jinja2.exceptions.TemplateError(message)

        def tojson(
            x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
        ) -> str:
            return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        return env.from_string(self.template or "")

    @cached_property
    def _chat(self) -> ChatFormat:
        """grpo_core.data.chat's view of this template, for rows with tools or content parts."""

        def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
            return str(
                self._compiled.render(
                    messages=messages, tools=tools, documents=None, add_generation_prompt=gen, **self.context
                )
            )

        return ChatFormat(render, self.template)

    def _special_tokens(self) -> dict[str, Any]:
        """bos_token, eos_token … as the template sees them (strings; AddedToken dicts by their content)."""
        out: dict[str, Any] = {}
        for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
            value = self._tc.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if value is not None:
                out[key] = value
        extra = self._tc.get("additional_special_tokens")
        if isinstance(extra, list):
            out["additional_special_tokens"] = [t.get("content") if isinstance(t, dict) else t for t in extra]
        return out

    def text(self, row: dict[str, Any]) -> str:
        """The prompt text of ``row`` exactly as grpo_core.data.rows.prompt_text renders it."""
        if needs_chat_format(row):
            messages = row.get("messages") or [{"role": "user", "content": row["prompt"]}]
            return self._chat.prompt(messages, row.get("tools"))
        if "messages" in row:
            if self.template is None:
                return "\n".join(f"{m['role']}: {m['content']}" for m in row["messages"]) + "\nassistant:"
            messages = row["messages"]
        elif self.template is None:
            return str(row["prompt"])
        else:
            messages = [{"role": "user", "content": row["prompt"]}]
        return str(
            self._compiled.render(
                messages=messages, tools=None, documents=None, add_generation_prompt=True, **self.context
            )
        )

    def counts(self, rows: Iterable[dict[str, Any]], batch: int = 256) -> Iterator[int]:
        """Token counts of each row's prompt, in order (encoded in batches: the tokenizers library is parallel)."""
        pending: list[str] = []
        for row in rows:
            pending.append(self.text(row))
            if len(pending) == batch:
                yield from (len(e.ids) for e in self.tokenizer.encode_batch(pending, add_special_tokens=False))
                pending = []
        if pending:
            yield from (len(e.ids) for e in self.tokenizer.encode_batch(pending, add_special_tokens=False))


def first_over(counter: PromptCounter, rows: Iterable[dict[str, Any]], limit: int) -> tuple[int, int] | None:
    """(1-based row number, tokens) of the first row whose prompt exceeds ``limit``; None when all fit."""
    for i, n in enumerate(counter.counts(rows), start=1):
        if n > limit:
            return i, n
    return None
