"""The internal API of eval runs, both sides: the worker claims a run, posts its items, and finishes it.

Served under ``/internal/evals`` (the ``internal`` router of api.evals.routes, worker token) and called by
worker.evals. Every write after the claim carries the claim id, so a second delivery of the same run (or a
worker presumed dead) cannot write into a run another worker holds: the API answers 409 ``stale_claim``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from grpo_core.evaluation.evals import ItemResult
from runtime.internal import ClaimSecret, ModelSource

PREFIX = "/internal/evals/runs"
CLAIM = "/{run_id}/claim"
ITEMS = "/{run_id}/items"
FINISH = "/{run_id}/finish"


def url(path: str, run_id: str) -> str:
    return PREFIX + path.format(run_id=run_id)


class Criterion(BaseModel):
    name: str
    grader: dict[str, Any] = Field(description="A grader spec as jobs use (grpo_core.schemas.graders).")
    pass_threshold: float


class SamplingParams(BaseModel):
    n: int = 1
    temperature: float = 1.0
    max_completion_tokens: int = 256
    top_p: float = 1.0
    seed: int = 42


class EvalClaimRequest(BaseModel):
    worker_id: str = Field(min_length=1, max_length=256)
    claim_id: str = Field(min_length=8, max_length=64)


class EvalClaim(BaseModel):
    """What a worker needs to run the eval: the model (base + optional adapter), the items, how to ask, how to
    grade."""

    run_id: str
    base_model: str
    model_source: ModelSource | None = None
    adapter_key: str | None = Field(None, description="The adapter tar in the object store; None: the base model.")
    file_key: str
    template: list[dict[str, str]]
    sampling: SamplingParams
    criteria: list[Criterion]
    secrets: dict[str, ClaimSecret] = Field(
        default_factory=dict,
        description="The values of the project secrets the criteria name (a score_model grader's own judge's key), "
        "by name. A named one missing here was deleted or cannot be decrypted: the worker fails the run saying which.",
    )


class EvalItemsRequest(BaseModel):
    claim_id: str
    items: list[ItemResult] = Field(max_length=1000)


class EvalFinishRequest(BaseModel):
    claim_id: str
    status: Literal["completed", "failed"]
    error_code: str | None = None
    error_message: str | None = None


class EvalItemsResponse(BaseModel):
    added: int


class EvalFinishResponse(BaseModel):
    status: str
