"""What a grader is, what it returns, and the per-sample failures it reports (no scoring code here).

Two kinds of "no score", as the two reference systems define them:
- a ``SampleError`` (the grader raised, timed out, returned a non-number, a template named a missing column, the
  judge failed) scores 0.0 and is reported with its reason — OpenAI's rule, so a completion that breaks the
  grader is never rewarded. Its class says whose failure it is (the pre-flight and OpenAI's ``metadata.errors``
  flags read the class, never the message);
- ``None`` returned by the grader means "does not apply to this sample" — TRL's rule: NaN, left out of the
  advantages (grpo_core.rewards.combine).

Like grpo_core.schemas.graders this module imports nothing heavy: the service's settings build a ``GraderEnv``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import SecretStr


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible HTTP endpoint the operator runs for graders (e.g. http://judge/v1)."""

    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None  # the embeddings' model; a judge's model is named by its grader


@dataclass(frozen=True)
class GraderEnv:
    """What the operator configures for graders (the worker and the API pass their settings in), and what a job
    brings: the values of the project secrets its graders name (a score_model grader's own endpoint's key)."""

    sandbox_tier: str = "auto"  # grpo_core.rewards.python_runner tiers; fail-closed by default
    judge: Endpoint = field(default_factory=Endpoint)  # /chat/completions for score_model graders
    embeddings: Endpoint = field(default_factory=Endpoint)  # /embeddings for text_similarity "cosine"
    request_timeout: float = 60.0
    judge_concurrency: int = 8
    # a grader's own endpoint may be a loopback or private address (grpo_core.schemas.endpoints)
    private_endpoints: bool = False
    # the job's project secrets by name, from its claim: masked in every repr, and left out of this one's
    secrets: Mapping[str, SecretStr] = field(default_factory=dict, repr=False)
    # False where no project secret is held (the API's checks): a grader's own judge is then never called, its
    # messages only rendered (a template naming a missing column is still caught; each sample a JudgeRequestError)
    call_own_judges: bool = True


class SampleError(Exception):
    """One sample could not be scored: it scores 0 and ``str(error)`` is what the job's owner reads."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else type(self).__name__

    def leaves(self) -> Iterator[SampleError]:
        """The failures this one stands for (a multi grader's part failures stand for themselves)."""
        yield self


class GraderCodeError(SampleError):
    """The grader's code raised on the sample, or returned something that is not a finite number."""


class InvalidVariable(SampleError):
    """A template names something the sample or the dataset row does not have (OpenAI's invalid variable)."""


class SourceLoadError(SampleError):
    """The python grader's source could not be imported in the sandbox (every sample fails the same way)."""


class SandboxFailure(SampleError):
    """The sandbox was killed while scoring (timeout, crash, a malformed reply); the grader's code is not at fault."""


class FormulaFailed(SampleError):
    """A multi grader's ``calculate_output`` could not be evaluated on the sample (e.g. a division by zero)."""


class JudgeRequestError(SampleError):
    """The judge or embeddings endpoint failed (network, HTTP status, malformed body)."""


class JudgeReplyError(SampleError):
    """The judge answered, but with no number in its reply."""


class PartErrors(SampleError):
    """A multi grader's failures on one sample: its parts' (by part name), then its formula's."""

    def __init__(self, parts: dict[str, SampleError], formula: FormulaFailed | None = None) -> None:
        said = [f"{name}: {err}" for name, err in parts.items()] + ([str(formula)] if formula else [])
        super().__init__("; ".join(said))
        self.parts, self.formula = parts, formula

    def leaves(self) -> Iterator[SampleError]:
        for err in self.parts.values():
            yield from err.leaves()
        if self.formula is not None:
            yield self.formula


def has_error(error: SampleError | None, kind: type[SampleError]) -> bool:
    """Whether ``error`` is, or (for a multi grader) contains, a failure of class ``kind``."""
    return error is not None and any(isinstance(leaf, kind) for leaf in error.leaves())


@dataclass
class GraderResult:
    scores: list[float | None]  # None: not applicable (TRL); an error scores 0.0 and sets errors[i]
    errors: list[SampleError | None] = field(default_factory=list)
    sub_scores: dict[str, list[float | None]] = field(default_factory=dict)  # a multi grader's parts


class Grader(Protocol):
    """A reward column: scores a batch of completions against their dataset rows; ``close`` frees what it holds
    (the sandbox process of a python grader, the HTTP client of a judge)."""

    name: str

    def score(
        self, texts: list[str], rows: list[dict[str, Any]], extras: list[dict[str, Any]] | None = None
    ) -> GraderResult:
        """``extras``: per sample, more of the grader's ``sample`` (a multi-turn episode's ``messages`` and
        ``output_tools``, grpo_core.rollout.agent.episodes)."""
        ...

    def close(self) -> None: ...
