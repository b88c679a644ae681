"""Grader specifications in OpenAI's grader JSON shapes, plus our built-ins; validated without importing torch.

The API validates a job's grader with these models before queueing; the worker builds the scoring function from
the same object (grpo_core.rewards.graders). OpenAI's shapes (``string_check``, ``text_similarity``, ``python``,
``score_model``, ``multi``) are accepted as OpenAI documents them, so an RFT user can reuse theirs. Our built-ins
(``math``, ``regex``, ``json_schema``, ``length``) cover the common verifiable rewards without user code.

Templates: ``{{item.<column>[.<key>…]}}``, ``{{sample.output_text}}``, ``{{sample.output_json.<key>…}}``.
"""

from __future__ import annotations

import ast
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from grpo_core.schemas.endpoints import check_form
from grpo_core.schemas.formula import parse_formula

MAX_PYTHON_SOURCE_BYTES = 256 * 1024  # OpenAI's limit for python graders.
# A project secret's name (POST /v1/secrets), as a grader or a job's integrations name it (runtime.internal).
SECRET_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StringCheckGrader(_Spec):
    """1.0 when ``operation`` holds between the rendered ``input`` and ``reference``, else 0.0.

    ``like``/``ilike`` mean "contains" (case-sensitive / -insensitive), as in OpenAI's grader.
    """

    type: Literal["string_check"] = "string_check"
    name: str = Field("string_check", min_length=1, max_length=128)
    input: str = Field("{{sample.output_text}}", description="Template rendered per sample.")
    reference: str = Field(..., description="Template rendered per dataset row, e.g. '{{item.answer}}'.")
    operation: Literal["eq", "ne", "like", "ilike"] = "eq"


SimilarityMetric = Literal[
    "fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l", "cosine"
]


class TextSimilarityGrader(_Spec):
    """Similarity of ``input`` to ``reference`` in [0, 1] by ``evaluation_metric`` (OpenAI's text_similarity).

    fuzzy_match: rapidfuzz ratio; bleu: sacrebleu sentence BLEU; gleu / meteor: NLTK (METEOR with exact and
    stem matches only: no WordNet corpus can be fetched at run time); rouge_*: Google's rouge-score (F-measure);
    cosine: needs an embedding endpoint configured by the operator (a clear error otherwise).
    """

    type: Literal["text_similarity"] = "text_similarity"
    name: str = Field("text_similarity", min_length=1, max_length=128)
    input: str = "{{sample.output_text}}"
    reference: str
    evaluation_metric: SimilarityMetric = "fuzzy_match"
    pass_threshold: float | None = Field(None, ge=0, le=1, description="If set, the score is 1 at or above it, else 0.")


class PythonGrader(_Spec):
    """User Python source defining ``grade(sample, item) -> float`` or ``reward(prompt, completion, **row)``.

    ``sample`` is ``{"output_text": str, "output_json": object|None}``; ``item`` is the dataset row. The source runs
    in a sandboxed process (grpo_core.rewards.python_runner), never inside the trainer. Returning None means
    "not applicable to this sample" (TRL's rule: left out of the advantages); raising, timing out or returning a
    non-number scores 0 and counts as an error (OpenAI's rule).
    """

    type: Literal["python"] = "python"
    name: str = Field("python", min_length=1, max_length=128)
    source: str = Field(..., description="Python source defining grade(sample, item) or reward(prompt, completion).")
    image_tag: str | None = Field(None, description="Accepted for OpenAI compatibility; the sandbox image is ours.")
    timeout_seconds: float = Field(30.0, gt=0, le=600, description="Wall-clock limit per batch of samples.")

    @field_validator("source")
    @classmethod
    def _defines_entry_point(cls, source: str) -> str:
        if len(source.encode()) > MAX_PYTHON_SOURCE_BYTES:
            raise ValueError(f"source is larger than {MAX_PYTHON_SOURCE_BYTES // 1024} kB")
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise ValueError(f"source does not parse: line {exc.lineno}: {exc.msg}") from None
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        if not names & {"grade", "reward"}:
            raise ValueError(
                "source must define a top-level function grade(sample, item) or reward(prompt, completion, **row)"
            )
        return source


class ScoreModelGrader(_Spec):
    """An LLM judge (OpenAI's score_model): the rendered ``input`` messages go to ``model`` on the operator's
    OpenAI-compatible endpoint, or on the grader's own ``endpoint`` (our extension: a team keeps judging with the
    model it used at OpenAI, or with one this service serves); the first number in the reply, clipped to
    ``range``, is the score. Without ``endpoint`` the spec is exactly OpenAI's: an unset field is not dumped."""

    type: Literal["score_model"] = "score_model"
    name: str = Field("score_model", min_length=1, max_length=128)
    model: str = Field(min_length=1, max_length=256)
    input: list[dict[str, Any]] = Field(min_length=1, description="Chat messages; content may use templates.")
    range: tuple[float, float] = (0.0, 1.0)
    sampling_params: dict[str, Any] = Field(default_factory=dict)
    endpoint: str | None = Field(
        None,
        max_length=2048,
        exclude_if=lambda url: url is None,
        description="An OpenAI-compatible base URL, e.g. https://api.openai.com/v1: the judge is POST "
        "{endpoint}/chat/completions. Unset: the service's judge (JUDGE_BASE_URL).",
    )
    api_key_secret: str | None = Field(
        None,
        pattern=SECRET_NAME_PATTERN,
        exclude_if=lambda name: name is None,
        description="The name of a secret of the job's project (POST /v1/secrets) holding the endpoint's key, sent "
        "as 'Authorization: Bearer'. Needs endpoint (the service's judge has its own key); unset: no key is sent.",
    )

    @model_validator(mode="after")
    def _check(self) -> ScoreModelGrader:
        if self.range[0] >= self.range[1]:
            raise ValueError("range must be [low, high] with low < high")
        if self.endpoint is not None:
            self.endpoint = check_form(self.endpoint)
        elif self.api_key_secret is not None:
            raise ValueError("api_key_secret is the key of the grader's own endpoint: set endpoint too")
        for i, m in enumerate(self.input):
            if not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                raise ValueError(f"input[{i}] needs string 'role' and 'content'")
        return self


class MathGrader(_Spec):
    """1.0 when the answer in the completion is mathematically equal to ``reference`` (math-verify: LaTeX,
    fractions, sets, intervals); the answer is the last ``\\boxed{}``, else the ``<answer>`` tag, else the text."""

    type: Literal["math"] = "math"
    name: str = Field("math", min_length=1, max_length=128)
    reference: str = Field("{{item.answer}}", description="Template of the gold answer.")
    extract: Literal["auto", "boxed", "answer_tag", "full"] = "auto"


RegexFlag = Literal["IGNORECASE", "MULTILINE", "DOTALL"]
DOTALL: tuple[RegexFlag, ...] = ("DOTALL",)  # the default: a completion's answer may span lines


class RegexGrader(_Spec):
    """1.0 when ``pattern`` matches the rendered ``input`` (``fullmatch`` or ``search``), else 0.0. The format
    reward of R1-style training is ``pattern: "<think>.*?</think>\\s*<answer>.*?</answer>"`` with ``fullmatch``."""

    type: Literal["regex"] = "regex"
    name: str = Field("regex", min_length=1, max_length=128)
    input: str = "{{sample.output_text}}"
    pattern: str = Field(min_length=1, max_length=4096)
    mode: Literal["fullmatch", "search"] = "search"
    flags: list[RegexFlag] = Field(default_factory=lambda: list(DOTALL))

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from None
        return pattern


class FormatGrader(RegexGrader):
    """``regex`` with the R1 format as default: ``<think>…</think>`` then ``<answer>…</answer>``, whole text."""

    type: Literal["format"] = "format"  # type: ignore[assignment]
    name: str = Field("format", min_length=1, max_length=128)
    pattern: str = r"\s*<think>.*?</think>\s*<answer>.*?</answer>\s*"
    mode: Literal["fullmatch", "search"] = "fullmatch"


class JsonSchemaGrader(_Spec):
    """1.0 when the completion parses as JSON and validates against ``schema`` (JSON Schema), else 0.0."""

    type: Literal["json_schema"] = "json_schema"
    name: str = Field("json_schema", min_length=1, max_length=128)
    json_schema: dict[str, Any] = Field(alias="schema")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"schema is not a valid JSON Schema: {exc.message}") from None
        return schema


class LengthGrader(_Spec):
    """A length term on the completion's characters: ``linear`` is −max(0, len − target)/scale (a penalty), and
    ``soft_overlong`` is DAPO's soft punishment (0 up to ``target``, linear to −1 at ``target + buffer``)."""

    type: Literal["length"] = "length"
    name: str = Field("length", min_length=1, max_length=128)
    mode: Literal["linear", "soft_overlong"] = "linear"
    target: int = Field(ge=0, le=10_000_000, description="Characters allowed without penalty.")
    scale: float = Field(1000.0, gt=0, description="linear: characters per unit of penalty.")
    buffer: int = Field(1000, ge=1, description="soft_overlong: characters over which the penalty reaches −1.")


Leaf = (
    StringCheckGrader
    | TextSimilarityGrader
    | PythonGrader
    | ScoreModelGrader
    | MathGrader
    | RegexGrader
    | FormatGrader
    | JsonSchemaGrader
    | LengthGrader
)
LeafSpec = Annotated[Leaf, Field(discriminator="type")]


class MultiGrader(_Spec):
    """Named sub-graders combined by ``calculate_output`` (OpenAI's multi): a formula over the sub-grader names
    with + - * / ^, min, max, abs, floor, ceil, exp, sqrt, log — parsed into a tree and evaluated by us, never
    ``eval``. Without ``calculate_output`` (our extension) the sub-graders are separate reward columns, combined
    by the hyperparameters ``reward_weights`` (in this order) and ``reward_aggregation``."""

    type: Literal["multi"] = "multi"
    name: str = Field("multi", min_length=1, max_length=128)
    graders: dict[str, LeafSpec] = Field(min_length=1, max_length=32)
    calculate_output: str | None = Field(None, max_length=4096)

    @model_validator(mode="after")
    def _formula(self) -> MultiGrader:
        for key in self.graders:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ValueError(f"sub-grader name {key!r} must be an identifier (it is a formula variable)")
        if self.calculate_output is not None:
            parse_formula(self.calculate_output, set(self.graders))
        return self


GraderSpec = Annotated[Leaf | MultiGrader, Field(discriminator="type")]


def reward_columns(spec: Leaf | MultiGrader) -> list[str]:
    """Names of the reward columns a grader yields: one, or a multi's sub-graders when it has no formula."""
    if isinstance(spec, MultiGrader) and spec.calculate_output is None:
        return list(spec.graders)
    return [spec.name]


def uses_python(spec: BaseModel) -> bool:
    """Whether a grader runs user Python (itself or as a part of a multi): it then needs the sandbox."""
    if isinstance(spec, MultiGrader):
        return any(uses_python(part) for part in spec.graders.values())
    return isinstance(spec, PythonGrader)


def own_judges(spec: BaseModel, path: str = "grader") -> dict[str, ScoreModelGrader]:
    """The score_model graders (itself or a multi's parts) that call their own ``endpoint``, by the path of each
    (``grader``, ``grader.graders.<key>``): what the API checks and the claim carries secrets for."""
    if isinstance(spec, MultiGrader):
        return {
            k: v for key, part in spec.graders.items() for k, v in own_judges(part, f"{path}.graders.{key}").items()
        }
    return {path: spec} if isinstance(spec, ScoreModelGrader) and spec.endpoint is not None else {}


def named_secrets(grader: dict[str, Any], path: str = "grader") -> dict[str, str]:
    """The project secrets a grader's JSON (as a job or an eval stores it) names, by the field that names each
    (``grader.api_key_secret``, ``grader.graders.<key>.api_key_secret``). Read from the JSON, not a validated spec,
    so a claim, which carries the values, costs no validation of the grader's source."""
    if grader.get("type") == "multi":
        parts = grader.get("graders") or {}
        return {k: v for key, part in parts.items() for k, v in named_secrets(part, f"{path}.graders.{key}").items()}
    name = grader.get("api_key_secret") if grader.get("type") == "score_model" else None
    return {f"{path}.api_key_secret": name} if isinstance(name, str) else {}
