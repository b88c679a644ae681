# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.environment_spec import EnvironmentSpec
    from ..models.format_grader import FormatGrader
    from ..models.grpo_config import GRPOConfig
    from ..models.json_schema_grader import JsonSchemaGrader
    from ..models.length_grader import LengthGrader
    from ..models.math_grader import MathGrader
    from ..models.multi_grader import MultiGrader
    from ..models.python_grader import PythonGrader
    from ..models.regex_grader import RegexGrader
    from ..models.score_model_grader import ScoreModelGrader
    from ..models.string_check_grader import StringCheckGrader
    from ..models.text_similarity_grader import TextSimilarityGrader


T = TypeVar("T", bound="ReinforcementMethod")


@_attrs_define
class ReinforcementMethod:
    """
    Attributes:
        grader (FormatGrader | JsonSchemaGrader | LengthGrader | MathGrader | MultiGrader | PythonGrader | RegexGrader |
            ScoreModelGrader | StringCheckGrader | TextSimilarityGrader): How a completion is scored (OpenAI grader JSON).
        environment (EnvironmentSpec | None | Unset): Tools the model may call, or an environment that answers its
            turns: Python source run in the sandbox. Set, every sample is a multi-turn episode and the grader scores the
            whole episode (sample.output_text is the last assistant message; sample.messages and sample.output_tools the
            rest).
        hyperparameters (GRPOConfig | Unset): Hyperparameters of one GRPO run: one flat JSON object (the job's
            ``hyperparameters``), whose fields are
            grouped in code by what they are: ``AlgorithmConfig`` (what is computed), ``ExecutionConfig`` (how it runs),
            ``MonitoringConfig`` (what is reported and kept), ``OpenAICompatFields`` (accepted, no effect).
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
    environment: EnvironmentSpec | None | Unset = UNSET
    hyperparameters: GRPOConfig | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.environment_spec import EnvironmentSpec  # noqa: PLC0415
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

        environment: dict[str, Any] | None | Unset
        if isinstance(self.environment, Unset):
            environment = UNSET
        elif isinstance(self.environment, EnvironmentSpec):
            environment = self.environment.to_dict()
        else:
            environment = self.environment

        hyperparameters: dict[str, Any] | Unset = UNSET
        if not isinstance(self.hyperparameters, Unset):
            hyperparameters = self.hyperparameters.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "grader": grader,
            }
        )
        if environment is not UNSET:
            field_dict["environment"] = environment
        if hyperparameters is not UNSET:
            field_dict["hyperparameters"] = hyperparameters

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.environment_spec import EnvironmentSpec  # noqa: PLC0415
        from ..models.format_grader import FormatGrader  # noqa: PLC0415
        from ..models.grpo_config import GRPOConfig  # noqa: PLC0415
        from ..models.json_schema_grader import JsonSchemaGrader  # noqa: PLC0415
        from ..models.length_grader import LengthGrader  # noqa: PLC0415
        from ..models.math_grader import MathGrader  # noqa: PLC0415
        from ..models.multi_grader import MultiGrader  # noqa: PLC0415
        from ..models.python_grader import PythonGrader  # noqa: PLC0415
        from ..models.regex_grader import RegexGrader  # noqa: PLC0415
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

        def _parse_environment(data: object) -> EnvironmentSpec | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                environment_type_0 = EnvironmentSpec.from_dict(data)

                return environment_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentSpec | None | Unset, data)

        environment = _parse_environment(d.pop("environment", UNSET))

        _hyperparameters = d.pop("hyperparameters", UNSET)
        hyperparameters: GRPOConfig | Unset
        if isinstance(_hyperparameters, Unset):
            hyperparameters = UNSET
        else:
            hyperparameters = GRPOConfig.from_dict(_hyperparameters)

        reinforcement_method = cls(
            grader=grader,
            environment=environment,
            hyperparameters=hyperparameters,
        )

        return reinforcement_method
