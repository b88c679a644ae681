# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.format_grader import FormatGrader
    from ..models.json_schema_grader import JsonSchemaGrader
    from ..models.length_grader import LengthGrader
    from ..models.math_grader import MathGrader
    from ..models.python_grader import PythonGrader
    from ..models.regex_grader import RegexGrader
    from ..models.score_model_grader import ScoreModelGrader
    from ..models.string_check_grader import StringCheckGrader
    from ..models.text_similarity_grader import TextSimilarityGrader


T = TypeVar("T", bound="MultiGraderGraders")


@_attrs_define
class MultiGraderGraders:
    additional_properties: dict[
        str,
        FormatGrader
        | JsonSchemaGrader
        | LengthGrader
        | MathGrader
        | PythonGrader
        | RegexGrader
        | ScoreModelGrader
        | StringCheckGrader
        | TextSimilarityGrader,
    ] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.format_grader import FormatGrader  # noqa: PLC0415
        from ..models.json_schema_grader import JsonSchemaGrader  # noqa: PLC0415
        from ..models.math_grader import MathGrader  # noqa: PLC0415
        from ..models.python_grader import PythonGrader  # noqa: PLC0415
        from ..models.regex_grader import RegexGrader  # noqa: PLC0415
        from ..models.score_model_grader import ScoreModelGrader  # noqa: PLC0415
        from ..models.string_check_grader import StringCheckGrader  # noqa: PLC0415
        from ..models.text_similarity_grader import TextSimilarityGrader  # noqa: PLC0415

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            if isinstance(prop, StringCheckGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, TextSimilarityGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, PythonGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, ScoreModelGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, MathGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, RegexGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, FormatGrader):
                field_dict[prop_name] = prop.to_dict()
            elif isinstance(prop, JsonSchemaGrader):
                field_dict[prop_name] = prop.to_dict()
            else:
                field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.format_grader import FormatGrader  # noqa: PLC0415
        from ..models.json_schema_grader import JsonSchemaGrader  # noqa: PLC0415
        from ..models.length_grader import LengthGrader  # noqa: PLC0415
        from ..models.math_grader import MathGrader  # noqa: PLC0415
        from ..models.python_grader import PythonGrader  # noqa: PLC0415
        from ..models.regex_grader import RegexGrader  # noqa: PLC0415
        from ..models.score_model_grader import ScoreModelGrader  # noqa: PLC0415
        from ..models.string_check_grader import StringCheckGrader  # noqa: PLC0415
        from ..models.text_similarity_grader import TextSimilarityGrader  # noqa: PLC0415

        d = dict(src_dict)
        multi_grader_graders = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():

            def _parse_additional_property(
                data: object,
            ) -> (
                FormatGrader
                | JsonSchemaGrader
                | LengthGrader
                | MathGrader
                | PythonGrader
                | RegexGrader
                | ScoreModelGrader
                | StringCheckGrader
                | TextSimilarityGrader
            ):
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_0 = StringCheckGrader.from_dict(data)

                    return additional_property_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_1 = TextSimilarityGrader.from_dict(data)

                    return additional_property_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_2 = PythonGrader.from_dict(data)

                    return additional_property_type_2
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_3 = ScoreModelGrader.from_dict(data)

                    return additional_property_type_3
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_4 = MathGrader.from_dict(data)

                    return additional_property_type_4
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_5 = RegexGrader.from_dict(data)

                    return additional_property_type_5
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_6 = FormatGrader.from_dict(data)

                    return additional_property_type_6
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_7 = JsonSchemaGrader.from_dict(data)

                    return additional_property_type_7
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                if not isinstance(data, dict):
                    raise TypeError()
                additional_property_type_8 = LengthGrader.from_dict(data)

                return additional_property_type_8

            additional_property = _parse_additional_property(prop_dict)

            additional_properties[prop_name] = additional_property

        multi_grader_graders.additional_properties = additional_properties
        return multi_grader_graders

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(
        self, key: str
    ) -> (
        FormatGrader
        | JsonSchemaGrader
        | LengthGrader
        | MathGrader
        | PythonGrader
        | RegexGrader
        | ScoreModelGrader
        | StringCheckGrader
        | TextSimilarityGrader
    ):
        return self.additional_properties[key]

    def __setitem__(
        self,
        key: str,
        value: FormatGrader
        | JsonSchemaGrader
        | LengthGrader
        | MathGrader
        | PythonGrader
        | RegexGrader
        | ScoreModelGrader
        | StringCheckGrader
        | TextSimilarityGrader,
    ) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
