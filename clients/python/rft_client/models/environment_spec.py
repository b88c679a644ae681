# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.environment_spec_tool_call_format import (
    EnvironmentSpecToolCallFormat,
    check_environment_spec_tool_call_format,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="EnvironmentSpec")


@_attrs_define
class EnvironmentSpec:
    """Python source run in the job's sandbox, defining either tool functions or ``respond``.

    Tools: every public top-level function is a tool the model may call, e.g.
    ``def calculator(expression: str) -> str``; a parameter named ``item`` receives the dataset row. Rows may carry
    OpenAI ``tools`` schemas; rows without them get schemas made from the functions' signatures.
    ``respond(messages, item) -> dict | None``: called after every assistant turn with the conversation so far;
    returns the next message (``{"role": "user" | "tool", "content": "…"}``) or None to end the episode.

        Attributes:
            source (str): Python source (see above).
            max_tool_output_chars (int | Unset): A tool result longer than this is cut (the model is told). Default: 4000.
            max_total_tokens (int | Unset): Tokens after the prompt per episode at most (the model's and the tools'); each
                turn is also capped by max_completion_tokens. An episode that reaches either limit is truncated. Default: 1024.
            max_turns (int | Unset): Assistant turns per episode at most. Default: 4.
            tool_call_format (EnvironmentSpecToolCallFormat | Unset): How the model writes tool calls: auto reads it from
                the chat template (Hermes <tool_call> tags when the template does not render tools; the tools are then described
                in a system message). Default: 'auto'.
            tool_timeout_seconds (float | Unset): Deadline of one tool or respond call. Default: 5.0.
            type_ (Literal['python'] | Unset):  Default: 'python'.
    """

    source: str
    max_tool_output_chars: int | Unset = 4000
    max_total_tokens: int | Unset = 1024
    max_turns: int | Unset = 4
    tool_call_format: EnvironmentSpecToolCallFormat | Unset = "auto"
    tool_timeout_seconds: float | Unset = 5.0
    type_: Literal["python"] | Unset = "python"

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        max_tool_output_chars = self.max_tool_output_chars

        max_total_tokens = self.max_total_tokens

        max_turns = self.max_turns

        tool_call_format: str | Unset = UNSET
        if not isinstance(self.tool_call_format, Unset):
            tool_call_format = self.tool_call_format

        tool_timeout_seconds = self.tool_timeout_seconds

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "source": source,
            }
        )
        if max_tool_output_chars is not UNSET:
            field_dict["max_tool_output_chars"] = max_tool_output_chars
        if max_total_tokens is not UNSET:
            field_dict["max_total_tokens"] = max_total_tokens
        if max_turns is not UNSET:
            field_dict["max_turns"] = max_turns
        if tool_call_format is not UNSET:
            field_dict["tool_call_format"] = tool_call_format
        if tool_timeout_seconds is not UNSET:
            field_dict["tool_timeout_seconds"] = tool_timeout_seconds
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        max_tool_output_chars = d.pop("max_tool_output_chars", UNSET)

        max_total_tokens = d.pop("max_total_tokens", UNSET)

        max_turns = d.pop("max_turns", UNSET)

        _tool_call_format = d.pop("tool_call_format", UNSET)
        tool_call_format: EnvironmentSpecToolCallFormat | Unset
        if isinstance(_tool_call_format, Unset):
            tool_call_format = UNSET
        else:
            tool_call_format = check_environment_spec_tool_call_format(_tool_call_format)

        tool_timeout_seconds = d.pop("tool_timeout_seconds", UNSET)

        type_ = cast(Literal["python"] | Unset, d.pop("type", UNSET))
        if type_ != "python" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'python', got '{type_}'")

        environment_spec = cls(
            source=source,
            max_tool_output_chars=max_tool_output_chars,
            max_total_tokens=max_total_tokens,
            max_turns=max_turns,
            tool_call_format=tool_call_format,
            tool_timeout_seconds=tool_timeout_seconds,
            type_=type_,
        )

        return environment_spec
