# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.format_grader import FormatGrader
    from ..models.json_schema_grader import JsonSchemaGrader
    from ..models.length_grader import LengthGrader
    from ..models.math_grader import MathGrader
    from ..models.multi_grader import MultiGrader
    from ..models.python_grader import PythonGrader
    from ..models.regex_grader import RegexGrader
    from ..models.run_request_item import RunRequestItem
    from ..models.score_model_grader import ScoreModelGrader
    from ..models.string_check_grader import StringCheckGrader
    from ..models.text_similarity_grader import TextSimilarityGrader


T = TypeVar("T", bound="RunRequest")


@_attrs_define
class RunRequest:
    """
    Attributes:
        grader (FormatGrader | JsonSchemaGrader | LengthGrader | MathGrader | MultiGrader | PythonGrader | RegexGrader |
            ScoreModelGrader | StringCheckGrader | TextSimilarityGrader):
        model_sample (str): The completion to score (sample.output_text).
        item (RunRequestItem | Unset): The dataset row (item.* in templates).
    """

    grader: (
        FormatGrader
        | JsonSchemaGrader
        | LengthGrader
        | MathGrader
        | MultiGrader
        | PythonGrader
        | RegexGrader
        | ScoreModelGrader
        | StringCheckGrader
        | TextSimilarityGrader
    )
    model_sample: str
    item: RunRequestItem | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.format_grader import FormatGrader  # noqa: PLC0415
        from ..models.json_schema_grader import JsonSchemaGrader  # noqa: PLC0415
        from ..models.length_grader import LengthGrader  # noqa: PLC0415
        from ..models.math_grader import MathGrader  # noqa: PLC0415
        from ..models.python_grader import PythonGrader  # noqa: PLC0415
        from ..models.regex_grader import RegexGrader  # noqa: PLC0415
        from ..models.score_model_grader import ScoreModelGrader  # noqa: PLC0415
        from ..models.string_check_grader import StringCheckGrader  # noqa: PLC0415
        from ..models.text_similarity_grader import TextSimilarityGrader  # noqa: PLC0415

        grader: dict[str, Any]
        if isinstance(self.grader, StringCheckGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, TextSimilarityGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, PythonGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, ScoreModelGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, MathGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, RegexGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, FormatGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, JsonSchemaGrader):
            grader = self.grader.to_dict()
        elif isinstance(self.grader, LengthGrader):
            grader = self.grader.to_dict()
        else:
            grader = self.grader.to_dict()

        model_sample = self.model_sample

        item: dict[str, Any] | Unset = UNSET
        if not isinstance(self.item, Unset):
            item = self.item.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "grader": grader,
                "model_sample": model_sample,
            }
        )
        if item is not UNSET:
            field_dict["item"] = item

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.format_grader import FormatGrader  # noqa: PLC0415
        from ..models.json_schema_grader import JsonSchemaGrader  # noqa: PLC0415
        from ..models.length_grader import LengthGrader  # noqa: PLC0415
        from ..models.math_grader import MathGrader  # noqa: PLC0415
        from ..models.multi_grader import MultiGrader  # noqa: PLC0415
        from ..models.python_grader import PythonGrader  # noqa: PLC0415
        from ..models.regex_grader import RegexGrader  # noqa: PLC0415
        from ..models.run_request_item import RunRequestItem  # noqa: PLC0415
        from ..models.score_model_grader import ScoreModelGrader  # noqa: PLC0415
        from ..models.string_check_grader import StringCheckGrader  # noqa: PLC0415
        from ..models.text_similarity_grader import TextSimilarityGrader  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_grader(
            data: object,
        ) -> (
            FormatGrader
            | JsonSchemaGrader
            | LengthGrader
            | MathGrader
            | MultiGrader
            | PythonGrader
            | RegexGrader
            | ScoreModelGrader
            | StringCheckGrader
            | TextSimilarityGrader
        ):
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_0 = StringCheckGrader.from_dict(data)

                return grader_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_1 = TextSimilarityGrader.from_dict(data)

                return grader_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_2 = PythonGrader.from_dict(data)

                return grader_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_3 = ScoreModelGrader.from_dict(data)

                return grader_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_4 = MathGrader.from_dict(data)

                return grader_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_5 = RegexGrader.from_dict(data)

                return grader_type_5
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_6 = FormatGrader.from_dict(data)

                return grader_type_6
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_7 = JsonSchemaGrader.from_dict(data)

                return grader_type_7
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grader_type_8 = LengthGrader.from_dict(data)

                return grader_type_8
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            grader_type_9 = MultiGrader.from_dict(data)

            return grader_type_9

        grader = _parse_grader(d.pop("grader"))

        model_sample = d.pop("model_sample")

        _item = d.pop("item", UNSET)
        item: RunRequestItem | Unset
        if isinstance(_item, Unset):
            item = UNSET
        else:
            item = RunRequestItem.from_dict(_item)

        run_request = cls(
            grader=grader,
            model_sample=model_sample,
            item=item,
        )

        return run_request
