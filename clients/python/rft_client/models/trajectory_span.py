# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.trajectory_span_kind import TrajectorySpanKind, check_trajectory_span_kind

T = TypeVar("T", bound="TrajectorySpan")


@_attrs_define
class TrajectorySpan:
    """A stretch of a multi-turn episode's tokens after the prompt: the model's turn (trained on) or what the
    environment and the template added (masked out of the loss).

        Attributes:
            kind (TrajectorySpanKind): Who wrote it: the model, a tool, the environment.
            text (str): The tokens decoded (special tokens kept, so template markup shows).
            tokens (int):
            trained (bool): Whether these tokens carry loss (only the model's do).
    """

    kind: TrajectorySpanKind
    text: str
    tokens: int
    trained: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kind: str = self.kind

        text = self.text

        tokens = self.tokens

        trained = self.trained

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kind": kind,
                "text": text,
                "tokens": tokens,
                "trained": trained,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = check_trajectory_span_kind(d.pop("kind"))

        text = d.pop("text")

        tokens = d.pop("tokens")

        trained = d.pop("trained")

        trajectory_span = cls(
            kind=kind,
            text=text,
            tokens=tokens,
            trained=trained,
        )

        trajectory_span.additional_properties = d
        return trajectory_span

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
