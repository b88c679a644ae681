"""Text-similarity metrics for the ``text_similarity`` grader, each from a maintained library, each in [0, 1].

- fuzzy_match: ``rapidfuzz.fuzz.ratio`` / 100 (normalised Indel similarity).
- bleu: ``sacrebleu.sentence_bleu`` / 100 (smoothed sentence BLEU, sacrebleu's defaults).
- gleu: ``nltk.translate.gleu_score.sentence_gleu`` on whitespace tokens.
- meteor: ``nltk.translate.meteor_score.single_meteor_score`` with exact and Porter-stem matching; the WordNet
  synonym stage is off because no corpus may be downloaded at run time (scores can be a little lower than
  METEOR with WordNet).
- rouge_1 … rouge_5, rouge_l: Google's ``rouge-score`` F-measure, with its stemmer.
- cosine: embeddings from the operator's OpenAI-compatible /embeddings endpoint (grpo_core.rewards.judge); without
  one the grader is refused with a clear error, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any


class _NoWordNet:
    """Stands in for NLTK's WordNet reader: no synonyms, so METEOR uses exact and stem matches only."""

    def synsets(self, *_: object, **__: object) -> list[object]:
        return []


@cache
def _rouge(kind: str) -> Any:  # a rouge_score RougeScorer (untyped package)
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([kind], use_stemmer=True)


def _fuzzy(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    return fuzz.ratio(a, b) / 100.0


def _bleu(a: str, b: str) -> float:
    import sacrebleu

    return sacrebleu.sentence_bleu(a, [b]).score / 100.0


def _gleu(a: str, b: str) -> float:
    from nltk.translate.gleu_score import sentence_gleu

    return float(sentence_gleu([b.split()], a.split()))


def _meteor(a: str, b: str) -> float:
    from nltk.translate.meteor_score import single_meteor_score

    return float(single_meteor_score(b.split(), a.split(), wordnet=_NoWordNet()))


def _rouge_metric(kind: str) -> Callable[[str, str], float]:
    def score(a: str, b: str) -> float:
        return float(_rouge(kind).score(b, a)[kind].fmeasure)

    return score


METRICS: dict[str, Callable[[str, str], float]] = {
    "fuzzy_match": _fuzzy,
    "bleu": _bleu,
    "gleu": _gleu,
    "meteor": _meteor,
    **{f"rouge_{n}": _rouge_metric(f"rouge{n}") for n in range(1, 6)},
    "rouge_l": _rouge_metric("rougeL"),
}


def similarity(metric: str, output: str, reference: str) -> float:
    """Score of ``output`` against ``reference`` (``cosine`` is grpo_core.rewards.judge.Embeddings)."""
    return METRICS[metric](output, reference)
