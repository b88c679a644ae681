"""``/v1/evals``: OpenAI's evals routes (evals, their runs, the runs' output items). Each parses, calls one service,
and shapes the answer; what the worker running a run calls is in api.evals.internal_routes."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from api.core.deps import CurrentProject, QueueDep, SessionDep, SettingsDep, StoreDep
from api.core.errors import ERROR_RESPONSES
from api.core.pagination import ListResponse
from api.db.models import EvalOutputItem, EvalRun
from api.evals import service as svc
from api.evals.schemas import (
    Eval,
    EvalCreate,
    EvalDeleted,
    EvalUpdate,
    OutputItem,
    Run,
    RunCreate,
    RunDeleted,
)

router = APIRouter(prefix="/v1/evals", tags=["evals"], responses=ERROR_RESPONSES)
Limit = Annotated[int, Query(ge=1, le=100)]
Order = Annotated[Literal["asc", "desc"], Query()]


def _report_url(request: Request, run: EvalRun) -> str:
    return str(request.base_url).rstrip("/") + f"/v1/evals/{run.eval_id}/runs/{run.id}"


def _item(row: EvalOutputItem, run: EvalRun) -> OutputItem:
    r = row.result
    sampling = run.data_source.get("sampling_params") or {}
    samples = [
        {
            "input": r["input"],
            "output": s["output"],
            "finish_reason": s["finish_reason"],
            "model": run.model,
            "usage": s["usage"],
            "error": None,
            "temperature": sampling.get("temperature", 1.0),
            "max_completion_tokens": sampling.get("max_completion_tokens", 256),
            "top_p": sampling.get("top_p", 1.0),
            "seed": sampling.get("seed", 42),
        }
        for s in r["samples"]
    ]
    empty = {
        "input": r["input"], "output": [], "finish_reason": "error", "model": run.model, "usage": {},
        "error": {"code": "item_error", "message": r.get("error") or "error"}, "temperature": 0.0,
        "max_completion_tokens": 0, "top_p": 1.0, "seed": 0,
    }  # fmt: skip
    return OutputItem.model_validate(
        {
            "id": row.id,
            "run_id": run.id,
            "eval_id": run.eval_id,
            "created_at": row.created_at,
            "status": row.status,
            "datasource_item_id": row.datasource_item_id,
            "datasource_item": r["datasource_item"],
            "results": r["results"],
            "sample": samples[0] if samples else empty,
            "samples": samples,
        }
    )


@router.post("")
def create_eval(body: EvalCreate, session: SessionDep, settings: SettingsDep, project: CurrentProject) -> Eval:
    """An eval: a ``custom`` item schema and testing criteria (the graders jobs use, each with pass_threshold)."""
    return Eval.from_row(svc.create_eval(session, settings, project, body))


@router.get("")
def list_evals(
    session: SessionDep, project: CurrentProject, limit: Limit = 20, after: str | None = None, order: Order = "asc"
) -> ListResponse[Eval]:
    page = svc.list_evals(session, project, limit=limit, after=after, order=order)
    return ListResponse.page([Eval.from_row(r) for r in page.items], page.has_more)


@router.get("/{eval_id}")
def retrieve_eval(eval_id: str, session: SessionDep, project: CurrentProject) -> Eval:
    return Eval.from_row(svc.get_eval(session, project, eval_id))


@router.post("/{eval_id}")
def update_eval(eval_id: str, body: EvalUpdate, session: SessionDep, project: CurrentProject) -> Eval:
    return Eval.from_row(svc.update_eval(session, project, eval_id, body))


@router.delete("/{eval_id}")
def delete_eval(eval_id: str, session: SessionDep, store: StoreDep, project: CurrentProject) -> EvalDeleted:
    svc.delete_eval(session, store, project, eval_id)
    return EvalDeleted(eval_id=eval_id)


@router.post("/{eval_id}/runs", status_code=201)
def create_run(
    eval_id: str,
    body: RunCreate,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    queue: QueueDep,
    settings: SettingsDep,
    project: CurrentProject,
) -> Run:
    """Sample a model (base, fine-tuned or a checkpoint) on the items and grade every sample; run by a worker."""
    run = svc.create_run(session, store, queue, settings, project_id=project, eval_id=eval_id, body=body)
    return Run.from_row(run, _report_url(request, run))


@router.get("/{eval_id}/runs")
def list_runs(
    eval_id: str,
    request: Request,
    session: SessionDep,
    project: CurrentProject,
    limit: Limit = 20,
    after: str | None = None,
    order: Order = "asc",
    status: str | None = None,
) -> ListResponse[Run]:
    page = svc.list_runs(session, project, eval_id, limit=limit, after=after, order=order, status=status)
    return ListResponse.page([Run.from_row(r, _report_url(request, r)) for r in page.items], page.has_more)


@router.get("/{eval_id}/runs/{run_id}")
def retrieve_run(eval_id: str, run_id: str, request: Request, session: SessionDep, project: CurrentProject) -> Run:
    run = svc.get_run(session, project, eval_id, run_id)
    return Run.from_row(run, _report_url(request, run))


@router.post("/{eval_id}/runs/{run_id}")
def cancel_run(eval_id: str, run_id: str, request: Request, session: SessionDep, project: CurrentProject) -> Run:
    """Cancel a queued or running run (OpenAI's ``runs.cancel``)."""
    run = svc.cancel_run(session, project, eval_id, run_id)
    return Run.from_row(run, _report_url(request, run))


@router.delete("/{eval_id}/runs/{run_id}")
def delete_run(eval_id: str, run_id: str, session: SessionDep, store: StoreDep, project: CurrentProject) -> RunDeleted:
    svc.delete_run(session, store, project, eval_id, run_id)
    return RunDeleted(run_id=run_id)


@router.get("/{eval_id}/runs/{run_id}/output_items")
def list_output_items(
    eval_id: str,
    run_id: str,
    session: SessionDep,
    project: CurrentProject,
    limit: Limit = 20,
    after: str | None = None,
    order: Order = "asc",
    status: Literal["pass", "fail", "error"] | None = None,
) -> ListResponse[OutputItem]:
    """Each item of the run: its samples and each testing criterion's score (``status`` filters)."""
    run = svc.get_run(session, project, eval_id, run_id)
    page = svc.list_items(session, project, eval_id, run_id, limit=limit, after=after, order=order, status=status)
    return ListResponse.page([_item(r, run) for r in page.items], page.has_more)


@router.get("/{eval_id}/runs/{run_id}/output_items/{output_item_id}")
def retrieve_output_item(
    eval_id: str, run_id: str, output_item_id: str, session: SessionDep, project: CurrentProject
) -> OutputItem:
    run = svc.get_run(session, project, eval_id, run_id)
    return _item(svc.get_item(session, project, eval_id, run_id, output_item_id), run)
