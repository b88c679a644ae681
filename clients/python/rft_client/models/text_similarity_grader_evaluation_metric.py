# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

TextSimilarityGraderEvaluationMetric = Literal[
    "bleu", "cosine", "fuzzy_match", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"
]

TEXT_SIMILARITY_GRADER_EVALUATION_METRIC_VALUES: set[TextSimilarityGraderEvaluationMetric] = {
    "bleu",
    "cosine",
    "fuzzy_match",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
}


def check_text_similarity_grader_evaluation_metric(value: str) -> TextSimilarityGraderEvaluationMetric:
    if value in TEXT_SIMILARITY_GRADER_EVALUATION_METRIC_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TEXT_SIMILARITY_GRADER_EVALUATION_METRIC_VALUES!r}")
