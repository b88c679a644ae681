"""What ``/v1/usage``, ``/v1/admin/usage`` and a job's ``usage`` field answer: sums of usage records
(api.db.models.UsageRecord; how each number is measured: api.usage.metering and docs/guides/usage.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

GroupBy = Literal["day", "job", "attempt"]
AdminGroupBy = Literal["project", "day"]
DEVICE_HOURS = "device_hour"  # the unit of a cost where no price is set


class Cost(BaseModel):
    """What something cost, from its usage records at the prices in force."""

    amount: float = Field(description="In ``unit``: the currency's units, or device-hours where no price is set.")
    unit: str = Field(description="The operator's currency (PRICE_CURRENCY, e.g. USD), or 'device_hour'.")
    device_hours: float = Field(description="Devices × hours, every device kind together.")


class PriceSheet(BaseModel):
    """A project's own prices over the service's (each field left out: the service's)."""

    model_config = ConfigDict(extra="forbid")

    device_hour: dict[str, float] = Field(
        default_factory=dict,
        description="Price of a device-hour by device kind ('H100', 'cpu', 'default'); a kind named here takes this "
        "price, the others the service's.",
    )
    inference_per_million_tokens: float | None = Field(None, ge=0, description="Price of a million inference tokens.")
    discount: float = Field(0.0, ge=0, le=1, description="Taken off every cost: 0.2 is 20 % off, 1 a free project.")

    @field_validator("device_hour")
    @classmethod
    def _prices(cls, v: dict[str, float]) -> dict[str, float]:
        for kind, price in v.items():
            if not kind.strip() or len(kind) > 256:
                raise ValueError("a device kind is 1 to 256 characters")
            if not price >= 0:
                raise ValueError(f"the price of {kind!r} must be 0 or more, not {price}")
        return v


class JobUsage(BaseModel):
    """What a job used, summed over its attempts (a killed and resumed job: both attempts, each once)."""

    device_seconds: float = Field(
        0.0, description="Devices × seconds from each attempt's claim to its worker's last contact (all nodes)."
    )
    device_seconds_by_kind: dict[str, float] = Field(
        default_factory=dict,
        description="device_seconds by what the devices are: a GPU's name, 'cpu (model)'; 'unknown' before the worker "
        "reported it.",
    )
    steps: int = Field(0, description="Optimizer steps run, each attempt's own (a resumed attempt's re-run steps too).")
    sampled_tokens: int = Field(0, description="Completion tokens sampled, those dropped by dynamic sampling included.")
    trained_tokens: int = Field(0, description="Completion tokens of the batches the updates trained on.")
    grader_calls: int = Field(0, description="Samples scored × reward columns (graders).")
    grader_seconds: float = Field(0.0, description="Wall-clock seconds the steps spent scoring.")
    sampling_seconds: float = Field(0.0, description="Wall-clock seconds the steps spent sampling.")
    training_seconds: float = Field(0.0, description="Wall-clock seconds the steps spent in the update.")
    eval_seconds: float = Field(0.0, description="Wall-clock seconds of validation.")
    attempts: int = Field(0, description="Attempts metered (claims of a job that ran).")
    cost: Cost | None = Field(
        None,
        description="What it cost at the prices in force (device-hours where none is set); computed from these "
        "counters, so a job's is the sum of its attempts'.",
    )


class Usage(JobUsage):
    """Every counter: a job's, plus what eval runs and inference through this API used."""

    eval_tokens: int = Field(0, description="Prompt and completion tokens of eval runs' samples.")
    inference_tokens: int = Field(0, description="Tokens of /v1/chat/completions and /v1/completions answers.")


class UsageBucket(Usage):
    """The usage of one day (``group_by=day``), one job (``group_by=job``; ``job_id`` null: what belongs to no job,
    eval runs, training sessions and inference) or, for the operator, one project."""

    object: Literal["usage.bucket"] = "usage.bucket"
    start_time: int = Field(description="Unix seconds: the day's start, or the group's first attempt's claim.")
    end_time: int = Field(description="Unix seconds: the next day's start, or the group's last contact.")
    day: str | None = Field(None, description="UTC YYYY-MM-DD (group_by=day).")
    job_id: str | None = Field(None, description="The job (group_by=job or attempt).")
    attempt: int | None = Field(None, description="The job's attempt (group_by=attempt: its lease epoch).")
    project_id: str | None = Field(None, description="The project (the admin view only).")


class UsagePage(BaseModel):
    """Buckets newest first, at most ``limit`` of them; ``totals`` sums every record the filters match."""

    object: Literal["list"] = "list"
    data: list[UsageBucket]
    has_more: bool = Field(description="More buckets matched than ``limit``: narrow start_time/end_time.")
    totals: Usage
