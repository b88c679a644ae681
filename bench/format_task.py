"""A format-following task for bench/learning.py: list N words of a category, lowercase, comma-separated, nothing
else. Graded, not 0/1, so a group's completions differ in reward from the first step.

Why this task: it is not arithmetic (the demo's task), SmolLM2-135M-Instruct does it badly out of the box (it
numbers the list, capitalises, adds a preamble, gets the count wrong), and each part of the format is a separate
share of the reward, so GRPO has a gradient before any completion is perfect. The check needs no word list: a
judge of "is this a fruit" would be a second model, and the bench measures learning the format, not knowledge.
"""

from __future__ import annotations

import random
import re
from typing import Any

CATEGORIES = (
    "fruits", "colors", "animals", "countries", "vegetables", "sports", "musical instruments", "flowers", "tools",
    "birds", "trees", "fish", "insects", "metals", "planets", "drinks", "desserts", "cities", "rivers", "jobs",
    "kitchen items", "clothes", "vehicles", "body parts", "board games", "languages", "spices", "gemstones",
)  # fmt: skip
_WORD = re.compile(r"[a-z]+")


def make_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` prompts; each row keeps its target ``count`` for the grader (a dataset column, as a user's would)."""
    rows = []
    for _ in range(n):
        count, what = rng.randint(2, 5), rng.choice(CATEGORIES)
        prompt = (
            f"Name {count} {what}. Answer with exactly {count} lowercase words separated by commas and nothing "
            "else: no numbering, no sentence."
        )
        rows.append({"prompt": prompt, "count": count})
    return rows


def split(seed: int = 1234) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(training rows, held-out rows): 128 and 48 prompts, fixed so every side and seed sees the same ones."""
    rows = make_rows(random.Random(seed), 176)
    return rows[:128], rows[128:]


def format_reward(text: str, count: int) -> float:
    """In [0, 1]: 0.25 one line and nothing but the list, 0.25 every item one lowercase word, 0.5 the count
    (falling linearly to 0 at twice or none of it)."""
    body = text.strip()
    if not body:
        return 0.0
    one_line = "\n" not in body and not body.endswith(".") and ":" not in body
    items = [x.strip() for x in body.split(",")]
    words = sum(1 for x in items if _WORD.fullmatch(x))
    count_score = max(0.0, 1.0 - abs(len(items) - count) / count)
    return 0.25 * one_line + 0.25 * (words / len(items)) + 0.5 * count_score


def reward_format(completions: list[Any], count: list[int], **kw: Any) -> list[float]:
    """TRL's reward function signature: dataset columns arrive as keyword lists."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [format_reward(t, int(n)) for t, n in zip(texts, count, strict=True)]


class FormatGrader:
    """The same reward as a grpo_core grader."""

    name = "list_format"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> Any:
        from grpo_core.rewards.base import GraderResult

        return GraderResult([format_reward(t, int(r["count"])) for t, r in zip(texts, rows, strict=True)])

    def close(self) -> None:
        pass
