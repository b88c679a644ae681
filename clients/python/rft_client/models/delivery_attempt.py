# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="DeliveryAttempt")


@_attrs_define
class DeliveryAttempt:
    """
    Attributes:
        at (int): Unix seconds when the attempt was sent.
        attempt (int):
        duration_ms (int):
        error (None | str):
        status_code (int | None): The receiver's HTTP status; null when no answer came.
    """

    at: int
    attempt: int
    duration_ms: int
    error: None | str
    status_code: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at

        attempt = self.attempt

        duration_ms = self.duration_ms

        error: None | str
        error = self.error

        status_code: int | None
        status_code = self.status_code

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "attempt": attempt,
                "duration_ms": duration_ms,
                "error": error,
                "status_code": status_code,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        attempt = d.pop("attempt")

        duration_ms = d.pop("duration_ms")

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        status_code = _parse_status_code(d.pop("status_code"))

        delivery_attempt = cls(
            at=at,
            attempt=attempt,
            duration_ms=duration_ms,
            error=error,
            status_code=status_code,
        )

        delivery_attempt.additional_properties = d
        return delivery_attempt

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
