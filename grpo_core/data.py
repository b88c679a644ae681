"""Dataset rows -> prompt strings, and the order prompts are visited in.

A row is a JSON object with either ``prompt`` (a string) or ``messages`` (a chat list); every other column is
kept and handed to the graders as ``item``. When the tokenizer has a chat template, a ``prompt`` string is sent
as one user message and the assistant turn is opened (``add_generation_prompt``), so an instruct model answers
the way it was tuned to; without a template the raw text is the prompt.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


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
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                raise RowError(line, f"messages[{i}] must be an object with string 'role' and 'content'")
    else:
        raise RowError(line, "a row needs a 'prompt' string or a 'messages' list")
    return obj


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
    grpo_core.prompt_tokens renders the same text without transformers, for the API's count."""
    kw = chat_template_kwargs or {}
    has_template = getattr(tokenizer, "chat_template", None) is not None
    if "messages" in row:
        if not has_template:
            return "\n".join(f"{m['role']}: {m['content']}" for m in row["messages"]) + "\nassistant:"
        return str(tokenizer.apply_chat_template(row["messages"], tokenize=False, add_generation_prompt=True, **kw))
    if has_template:
        turn = [{"role": "user", "content": row["prompt"]}]
        return str(tokenizer.apply_chat_template(turn, tokenize=False, add_generation_prompt=True, **kw))
    return str(row["prompt"])


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
