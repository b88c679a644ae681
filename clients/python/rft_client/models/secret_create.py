# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="SecretCreate")


@_attrs_define
class SecretCreate:
    """Body of ``POST /v1/secrets``: writes the secret, or rotates it when the name exists.

    Attributes:
        name (str): 1 to 64 letters, digits, `_`, `.` or `-`; what a job's integrations name it by (`{"type": "wandb",
            "api_key_secret": NAME}`), and a score_model grader the key of its own endpoint by (`"api_key_secret": NAME`
            beside `endpoint`). Writing an existing name replaces its value.
        value (str): The secret itself (e.g. a W&B API key). Stored encrypted; never returned by any route.
    """

    name: str
    value: str

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        value = self.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "value": value,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        value = d.pop("value")

        secret_create = cls(
            name=name,
            value=value,
        )

        return secret_create
