"""The job's ``environment``: user code that answers the model's tool calls or its turns (torch-free: the API
validates it with the job)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_SOURCE_CHARS = 256_000


class EnvironmentSpec(BaseModel):
    """Python source run in the job's sandbox, defining either tool functions or ``respond``.

    Tools: every public top-level function is a tool the model may call, e.g.
    ``def calculator(expression: str) -> str``; a parameter named ``item`` receives the dataset row. Rows may carry
    OpenAI ``tools`` schemas; rows without them get schemas made from the functions' signatures.
    ``respond(messages, item) -> dict | None``: called after every assistant turn with the conversation so far;
    returns the next message (``{"role": "user" | "tool", "content": "…"}``) or None to end the episode.
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["python"] = "python"
    source: str = Field(min_length=1, max_length=MAX_SOURCE_CHARS, description="Python source (see above).")
    max_turns: int = Field(4, ge=1, le=64, description="Assistant turns per episode at most.")
    max_total_tokens: int = Field(
        1024,
        ge=1,
        le=131_072,
        description="Tokens after the prompt per episode at most (the model's and the tools'); each turn is also "
        "capped by max_completion_tokens. An episode that reaches either limit is truncated.",
    )
    tool_timeout_seconds: float = Field(5.0, gt=0, le=300, description="Deadline of one tool or respond call.")
    max_tool_output_chars: int = Field(
        4000, ge=1, le=200_000, description="A tool result longer than this is cut (the model is told)."
    )
    tool_call_format: Literal["auto", "hermes", "llama3", "mistral"] = Field(
        "auto",
        description="How the model writes tool calls: auto reads it from the chat template (Hermes <tool_call> "
        "tags when the template does not render tools; the tools are then described in a system message).",
    )
