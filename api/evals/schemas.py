"""OpenAI's evals shapes (``/v1/evals``): what the official ``openai`` SDK's ``client.evals`` sends and reads.

Implemented: ``custom`` data source configs; testing criteria that are the graders jobs use (plus OpenAI's
``pass_threshold``); runs with a ``completions`` data source over a ``file_id`` or inline ``file_content``, an
``input_messages`` template over ``{{item.x}}``, ``model`` = a base model, a fine-tuned model or a checkpoint,
and ``sampling_params`` (``n`` is ours: OpenAI samples once). Not implemented (a 400 says so): the ``logs`` and
``stored_completions`` data sources, ``jsonl``/``responses`` run data sources, ``item_reference`` inputs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from api.db import models as db


class CustomDataSourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["custom"]
    item_schema: dict[str, Any] = Field(description="JSON schema of an item (each line's `item`).")
    include_sample_schema: bool = False


class EvalCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=256)
    data_source_config: dict[str, Any] = Field(description="`{type: custom, item_schema}` (the only type here).")
    testing_criteria: list[dict[str, Any]] = Field(
        min_length=1, max_length=16, description="Graders as jobs use them, each with an optional pass_threshold."
    )
    metadata: dict[str, str] | None = Field(None, max_length=16)


class EvalUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=256)
    metadata: dict[str, str] | None = Field(None, max_length=16)


class Eval(BaseModel):
    object: Literal["eval"] = "eval"
    id: str
    name: str | None
    created_at: int
    data_source_config: dict[str, Any]
    testing_criteria: list[dict[str, Any]]
    metadata: dict[str, str] | None

    @classmethod
    def from_row(cls, row: db.Eval) -> Eval:
        return cls.model_validate(row.columns() | {"metadata": row.metadata_})


class EvalDeleted(BaseModel):
    object: Literal["eval.deleted"] = "eval.deleted"
    deleted: bool = True
    eval_id: str


class TemplateMessage(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI's EasyInputMessage has `type: message`

    role: Literal["system", "developer", "user", "assistant"]
    content: str


class InputMessages(BaseModel):
    type: Literal["template"]
    template: list[TemplateMessage] = Field(min_length=1, max_length=64)


class SamplingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int = Field(1, ge=1, le=16, description="Samples per item (ours; OpenAI samples once).")
    temperature: float = Field(1.0, ge=0, le=2)
    max_completion_tokens: int = Field(256, ge=1, le=8192)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int = Field(42, ge=0, le=2**31 - 1)


class CompletionsDataSource(BaseModel):
    type: Literal["completions"]
    source: dict[str, Any] = Field(description="`{type: file_id, id}` or `{type: file_content, content: [...]}`.")
    input_messages: InputMessages
    model: str = Field(min_length=1, max_length=512)
    sampling_params: SamplingParams = Field(default_factory=SamplingParams)


class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=256)
    data_source: dict[str, Any] = Field(description="A `completions` data source (the only type here).")
    metadata: dict[str, str] | None = Field(None, max_length=16)


class ResultCounts(BaseModel):
    total: int = 0
    errored: int = 0
    failed: int = 0
    passed: int = 0


class CriterionCounts(BaseModel):
    testing_criteria: str
    passed: int
    failed: int


class EvalError(BaseModel):
    code: str
    message: str


class Run(BaseModel):
    object: Literal["eval.run"] = "eval.run"
    id: str
    eval_id: str
    name: str | None
    # one of EvalRunStatus (checked), an inline enum in the spec
    status: Annotated[str, AfterValidator(lambda s: db.EvalRunStatus(s).value)] = Field(
        json_schema_extra={"enum": [s.value for s in db.EvalRunStatus]}
    )
    model: str
    created_at: int
    data_source: dict[str, Any]
    result_counts: ResultCounts
    per_testing_criteria_results: list[CriterionCounts]
    per_model_usage: list[dict[str, Any]]
    report_url: str
    error: EvalError | None
    metadata: dict[str, str] | None

    @classmethod
    def from_row(cls, row: db.EvalRun, report_url: str) -> Run:
        usage = [row.usage | {"model_name": row.model}] if row.usage else []
        return cls.model_validate(
            row.columns()
            | {
                "metadata": row.metadata_,
                "result_counts": row.result_counts or {},
                "per_testing_criteria_results": row.per_testing_criteria_results or [],
                "per_model_usage": usage,
                "report_url": report_url,
            }
        )


class RunDeleted(BaseModel):
    object: Literal["eval.run.deleted"] = "eval.run.deleted"
    deleted: bool = True
    run_id: str


class OutputItemResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    passed: bool
    score: float | None


class OutputItemSample(BaseModel):
    input: list[dict[str, str]]
    output: list[dict[str, str]]
    finish_reason: str
    model: str
    usage: dict[str, int]
    error: EvalError | None
    temperature: float
    max_completion_tokens: int
    top_p: float
    seed: int


class OutputItem(BaseModel):
    object: Literal["eval.run.output_item"] = "eval.run.output_item"
    id: str
    run_id: str
    eval_id: str
    created_at: int
    status: str
    datasource_item_id: int
    datasource_item: dict[str, Any]
    results: list[OutputItemResult]
    sample: OutputItemSample
    samples: list[OutputItemSample] = Field(description="Every sample when n > 1 (`sample` is the first).")
