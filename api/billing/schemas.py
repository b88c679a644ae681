"""What the money routes take and answer: a project's billing, its change, the log of changes, an estimate (a
cost and a price sheet are usage's: api.usage.schemas; a job's budget is the job's: api.jobs.schemas)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.usage.schemas import Cost, PriceSheet


class ProjectBilling(BaseModel):
    """A project's prices, budget and spending this month (``GET /v1/billing``, ``/v1/admin/projects/{id}/billing``)."""

    object: Literal["billing"] = "billing"
    project_id: str
    unit: str = Field(description="What costs and budgets are counted in: the currency, or 'device_hour'.")
    device_hour: dict[str, float] = Field(description="Device-hour prices in force, the project's over the service's.")
    inference_per_million_tokens: float
    discount: float
    monthly_budget: float | None = Field(description="The project's budget for a UTC calendar month; null: none.")
    month: str = Field(description="The month spent so far: UTC YYYY-MM.")
    spent_this_month: Cost
    over_budget: bool = Field(description="New jobs, resumes and training-API calls are refused while true.")


class BillingUpdate(BaseModel):
    """Body of ``POST /v1/admin/projects/{id}/billing``: what to change (a field left out stays as it is)."""

    model_config = ConfigDict(extra="forbid")

    prices: PriceSheet | None = Field(None, description="The project's own prices (replaces the previous sheet).")
    clear_prices: bool = Field(False, description="Back to the service's prices.")
    monthly_budget: float | None = Field(None, ge=0, description="The project's budget for a UTC calendar month.")
    clear_monthly_budget: bool = Field(False, description="No monthly budget.")

    @model_validator(mode="after")
    def _one_each(self) -> BillingUpdate:
        if self.prices is not None and self.clear_prices:
            raise ValueError("prices and clear_prices together")
        if self.monthly_budget is not None and self.clear_monthly_budget:
            raise ValueError("monthly_budget and clear_monthly_budget together")
        return self


class BillingChangeOut(BaseModel):
    """One change of a price sheet or a budget (``GET /v1/admin/billing/changes``)."""

    object: Literal["billing.change"] = "billing.change"
    id: str
    created_at: int
    project_id: str
    subject: str
    field: str
    before: Any = None
    after: Any = None
    actor: str


class BillingChangePage(BaseModel):
    object: Literal["list"] = "list"
    data: list[BillingChangeOut]


class Span(BaseModel):
    """An expected figure and the range it is likely in."""

    expected: float
    low: float
    high: float


class EstimateDrivers(BaseModel):
    """What the estimate is made of: the job's shape and the rates measured on this device kind."""

    steps: int = Field(description="Optimizer steps the job will take.")
    prompts_per_step: int
    samples_per_prompt: int = Field(description="Completions drawn per prompt (gfpo_sample_size or group_size).")
    completion_tokens_per_sample: float = Field(
        description="Expected mean completion length: max_completion_tokens × the share earlier jobs of this model "
        "used of theirs."
    )
    sampled_tokens: int = Field(description="Over the whole job.")
    trained_tokens: int
    grader_calls: int
    evals: int = Field(description="Validation runs (eval_interval, and the last step) × validation prompts.")
    seconds_per_decode_step: float = Field(description="What one decode step of sampling costs, whatever the rows.")
    seconds_per_decode_row: float = Field(description="What each row (prompt × completion) adds to a decode step.")
    seconds_per_sampled_token: float = Field(description="The two above over this job's expected tokens.")
    seconds_per_update_row: float = Field(description="What the update costs a row (prompt × completion).")
    seconds_per_update_row_token: float = Field(description="What each max_completion_token adds to a row's update.")
    seconds_per_trained_token: float = Field(description="The two above over this job's expected tokens.")
    seconds_per_grader_call: float
    seconds_per_eval_prompt: float
    setup_seconds: float = Field(description="Per attempt: loading the model, the first contact, the last upload.")
    overhead_seconds_per_step: float = Field(description="Per step, beyond sampling, scoring and the update.")
    devices: int = Field(description="Devices × nodes: every device of the job is billed.")


class JobEstimate(BaseModel):
    """``POST /v1/fine_tuning/jobs/estimate``: what a job will take and cost, before it runs."""

    object: Literal["fine_tuning.job.estimate"] = "fine_tuning.job.estimate"
    model: str
    device_kind: str = Field(description="The device kind the estimate is for: what a worker would give the job.")
    step_seconds: Span = Field(description="Wall-clock seconds of one step.")
    device_seconds: Span = Field(description="Devices × seconds of the whole job, as its usage will count them.")
    device_hours: Span
    cost: Span = Field(description="In ``unit``, at this project's prices.")
    unit: str = Field(description="The project's unit: the currency, or 'device_hour' where nothing is priced.")
    confidence: Literal["high", "medium", "low"] = Field(
        description="high: calibrated from 3 or more finished jobs of this model on this device kind; medium: from "
        "1 or 2, or from other models on it; low: no history (a stated fallback from the model's size)."
    )
    basis: str = Field(description="In words: what it was calibrated from, and how far off that calibration was.")
    drivers: EstimateDrivers
