# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="EpisodeStats")


@_attrs_define
class EpisodeStats:
    """Multi-turn episodes of the step (jobs with an environment).

    Attributes:
        environment_tokens_mean (float): Tokens per episode added by tools, environment, template.
        tool_call_errors (int): Malformed calls: not JSON, an unknown tool, arguments off the schema.
        tool_calls_mean (float): Tool (or respond) calls per episode.
        tool_error_rate (float): Share of calls that raised, timed out or returned no usable value.
        truncated_rate (float): Share of episodes ended by max_turns, max_total_tokens or length.
        turns_max (int):
        turns_mean (float): Assistant turns per episode.
        tool_seconds_max (float | None | Unset):
        tool_seconds_mean (float | None | Unset): Seconds of one call inside the sandbox.
    """

    environment_tokens_mean: float
    tool_call_errors: int
    tool_calls_mean: float
    tool_error_rate: float
    truncated_rate: float
    turns_max: int
    turns_mean: float
    tool_seconds_max: float | None | Unset = UNSET
    tool_seconds_mean: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        environment_tokens_mean = self.environment_tokens_mean

        tool_call_errors = self.tool_call_errors

        tool_calls_mean = self.tool_calls_mean

        tool_error_rate = self.tool_error_rate

        truncated_rate = self.truncated_rate

        turns_max = self.turns_max

        turns_mean = self.turns_mean

        tool_seconds_max: float | None | Unset
        if isinstance(self.tool_seconds_max, Unset):
            tool_seconds_max = UNSET
        else:
            tool_seconds_max = self.tool_seconds_max

        tool_seconds_mean: float | None | Unset
        if isinstance(self.tool_seconds_mean, Unset):
            tool_seconds_mean = UNSET
        else:
            tool_seconds_mean = self.tool_seconds_mean

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "environment_tokens_mean": environment_tokens_mean,
                "tool_call_errors": tool_call_errors,
                "tool_calls_mean": tool_calls_mean,
                "tool_error_rate": tool_error_rate,
                "truncated_rate": truncated_rate,
                "turns_max": turns_max,
                "turns_mean": turns_mean,
            }
        )
        if tool_seconds_max is not UNSET:
            field_dict["tool_seconds_max"] = tool_seconds_max
        if tool_seconds_mean is not UNSET:
            field_dict["tool_seconds_mean"] = tool_seconds_mean

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        environment_tokens_mean = d.pop("environment_tokens_mean")

        tool_call_errors = d.pop("tool_call_errors")

        tool_calls_mean = d.pop("tool_calls_mean")

        tool_error_rate = d.pop("tool_error_rate")

        truncated_rate = d.pop("truncated_rate")

        turns_max = d.pop("turns_max")

        turns_mean = d.pop("turns_mean")

        def _parse_tool_seconds_max(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tool_seconds_max = _parse_tool_seconds_max(d.pop("tool_seconds_max", UNSET))

        def _parse_tool_seconds_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tool_seconds_mean = _parse_tool_seconds_mean(d.pop("tool_seconds_mean", UNSET))

        episode_stats = cls(
            environment_tokens_mean=environment_tokens_mean,
            tool_call_errors=tool_call_errors,
            tool_calls_mean=tool_calls_mean,
            tool_error_rate=tool_error_rate,
            truncated_rate=truncated_rate,
            turns_max=turns_max,
            turns_mean=turns_mean,
            tool_seconds_max=tool_seconds_max,
            tool_seconds_mean=tool_seconds_mean,
        )

        episode_stats.additional_properties = d
        return episode_stats

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
