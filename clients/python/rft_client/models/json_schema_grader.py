# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_schema_grader_schema import JsonSchemaGraderSchema


T = TypeVar("T", bound="JsonSchemaGrader")


@_attrs_define
class JsonSchemaGrader:
    """1.0 when the completion parses as JSON and validates against ``schema`` (JSON Schema), else 0.0.

    Attributes:
        schema (JsonSchemaGraderSchema):
        name (str | Unset):  Default: 'json_schema'.
        type_ (Literal['json_schema'] | Unset):  Default: 'json_schema'.
    """

    schema: JsonSchemaGraderSchema
    name: str | Unset = "json_schema"
    type_: Literal["json_schema"] | Unset = "json_schema"

    def to_dict(self) -> dict[str, Any]:
        schema = self.schema.to_dict()

        name = self.name

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "schema": schema,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.json_schema_grader_schema import JsonSchemaGraderSchema  # noqa: PLC0415

        d = dict(src_dict)
        schema = JsonSchemaGraderSchema.from_dict(d.pop("schema"))

        name = d.pop("name", UNSET)

        type_ = cast(Literal["json_schema"] | Unset, d.pop("type", UNSET))
        if type_ != "json_schema" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'json_schema', got '{type_}'")

        json_schema_grader = cls(
            schema=schema,
            name=name,
            type_=type_,
        )

        return json_schema_grader
