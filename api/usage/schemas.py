"""What ``/v1/usage``, ``/v1/admin/usage`` and a job's ``usage`` field answer: sums of usage records
(api.db.models.UsageRecord; how each number is measured: api.usage.metering and docs/guides/usage.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

GroupBy = Literal["day", "job"]
AdminGroupBy = Literal["project", "day"]


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
    attempts: int = Field(0, description="Attempts metered (claims of a job that ran).")


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
    job_id: str | None = Field(None, description="The job (group_by=job).")
    project_id: str | None = Field(None, description="The project (the admin view only).")


class UsagePage(BaseModel):
    """Buckets newest first, at most ``limit`` of them; ``totals`` sums every record the filters match."""

    object: Literal["list"] = "list"
    data: list[UsageBucket]
    has_more: bool = Field(description="More buckets matched than ``limit``: narrow start_time/end_time.")
    totals: Usage
