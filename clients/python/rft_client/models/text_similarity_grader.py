# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.text_similarity_grader_evaluation_metric import (
    TextSimilarityGraderEvaluationMetric,
    check_text_similarity_grader_evaluation_metric,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="TextSimilarityGrader")


@_attrs_define
class TextSimilarityGrader:
    """Similarity of ``input`` to ``reference`` in [0, 1] by ``evaluation_metric`` (OpenAI's text_similarity).

    fuzzy_match: rapidfuzz ratio; bleu: sacrebleu sentence BLEU; gleu / meteor: NLTK (METEOR with exact and
    stem matches only: no WordNet corpus can be fetched at run time); rouge_*: Google's rouge-score (F-measure);
    cosine: needs an embedding endpoint configured by the operator (a clear error otherwise).

        Attributes:
            reference (str):
            evaluation_metric (TextSimilarityGraderEvaluationMetric | Unset):  Default: 'fuzzy_match'.
            input_ (str | Unset):  Default: '{{sample.output_text}}'.
            name (str | Unset):  Default: 'text_similarity'.
            pass_threshold (float | None | Unset): If set, the score is 1 at or above it, else 0.
            type_ (Literal['text_similarity'] | Unset):  Default: 'text_similarity'.
    """

    reference: str
    evaluation_metric: TextSimilarityGraderEvaluationMetric | Unset = "fuzzy_match"
    input_: str | Unset = "{{sample.output_text}}"
    name: str | Unset = "text_similarity"
    pass_threshold: float | None | Unset = UNSET
    type_: Literal["text_similarity"] | Unset = "text_similarity"

    def to_dict(self) -> dict[str, Any]:
        reference = self.reference

        evaluation_metric: str | Unset = UNSET
        if not isinstance(self.evaluation_metric, Unset):
            evaluation_metric = self.evaluation_metric

        input_ = self.input_

        name = self.name

        pass_threshold: float | None | Unset
        if isinstance(self.pass_threshold, Unset):
            pass_threshold = UNSET
        else:
            pass_threshold = self.pass_threshold

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "reference": reference,
            }
        )
        if evaluation_metric is not UNSET:
            field_dict["evaluation_metric"] = evaluation_metric
        if input_ is not UNSET:
            field_dict["input"] = input_
        if name is not UNSET:
            field_dict["name"] = name
        if pass_threshold is not UNSET:
            field_dict["pass_threshold"] = pass_threshold
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reference = d.pop("reference")

        _evaluation_metric = d.pop("evaluation_metric", UNSET)
        evaluation_metric: TextSimilarityGraderEvaluationMetric | Unset
        if isinstance(_evaluation_metric, Unset):
            evaluation_metric = UNSET
        else:
            evaluation_metric = check_text_similarity_grader_evaluation_metric(_evaluation_metric)

        input_ = d.pop("input", UNSET)

        name = d.pop("name", UNSET)

        def _parse_pass_threshold(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        pass_threshold = _parse_pass_threshold(d.pop("pass_threshold", UNSET))

        type_ = cast(Literal["text_similarity"] | Unset, d.pop("type", UNSET))
        if type_ != "text_similarity" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'text_similarity', got '{type_}'")

        text_similarity_grader = cls(
            reference=reference,
            evaluation_metric=evaluation_metric,
            input_=input_,
            name=name,
            pass_threshold=pass_threshold,
            type_=type_,
        )

        return text_similarity_grader
