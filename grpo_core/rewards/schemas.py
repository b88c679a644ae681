"""Grader specifications in OpenAI's grader JSON shape, validated without importing torch.

The API validates a job's grader with these models before queueing; the worker builds the scoring function from
the same object (grpo_core.rewards.graders). Shapes follow OpenAI's graders so an RFT user can reuse theirs:
``string_check`` (``{"type": "string_check", "input", "reference", "operation"}``) and ``python``
(``{"type": "python", "source": "def grade(sample, item) -> float: ..."}``).
"""

from __future__ import annotations

import ast
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_PYTHON_SOURCE_BYTES = 256 * 1024  # OpenAI's limit for python graders.


class StringCheckGrader(BaseModel):
    """1.0 when ``operation`` holds between the rendered ``input`` and ``reference``, else 0.0.

    ``like``/``ilike`` mean "contains" (case-sensitive / -insensitive), as in OpenAI's grader.
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["string_check"] = "string_check"
    name: str = Field("string_check", min_length=1, max_length=128)
    input: str = Field("{{sample.output_text}}", description="Template rendered per sample.")
    reference: str = Field(..., description="Template rendered per dataset row, e.g. '{{item.answer}}'.")
    operation: Literal["eq", "ne", "like", "ilike"] = "eq"


class PythonGrader(BaseModel):
    """User Python source defining ``grade(sample, item) -> float``.

    ``sample`` is ``{"output_text": str}``; ``item`` is the dataset row (all its columns). The source runs in a
    separate process with a timeout, never inside the trainer.
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["python"] = "python"
    name: str = Field("python", min_length=1, max_length=128)
    source: str = Field(..., description="Python source defining grade(sample, item) -> float.")
    timeout_seconds: float = Field(30.0, gt=0, le=600, description="Wall-clock limit per batch of samples.")

    @field_validator("source")
    @classmethod
    def _defines_grade(cls, source: str) -> str:
        if len(source.encode()) > MAX_PYTHON_SOURCE_BYTES:
            raise ValueError(f"source is larger than {MAX_PYTHON_SOURCE_BYTES // 1024} kB")
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise ValueError(f"source does not parse: line {exc.lineno}: {exc.msg}") from None
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        if "grade" not in names:
            raise ValueError("source must define a top-level function grade(sample, item) -> float")
        return source


GraderSpec = Annotated[StringCheckGrader | PythonGrader, Field(discriminator="type")]
