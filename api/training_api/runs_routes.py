"""``/v1/training_runs``: the runs of the training API (a user-written loop driven by the ``tinker`` SDK) as the
dashboard and the generated client see them, beside the jobs: the list, one run with its checkpoints, its
per-step series, the metrics the client reports for its steps (a reward the service cannot see), and a
checkpoint's download."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response, StreamingResponse

from api.checkpoints.downloads import TAR, tar_response
from api.core.deps import CurrentProject, SessionDep, StoreDep
from api.core.errors import ERROR_RESPONSES
from api.core.pagination import ListResponse
from api.training import runs
from api.training.run_schemas import ReportMetrics, RunMetrics, RunStep, TrainingRunObject
from api.training.service import get_run

router = APIRouter(prefix="/v1/training_runs", tags=["training_runs"], responses=ERROR_RESPONSES)


@router.get("")
def list_training_runs(
    session: SessionDep,
    project: CurrentProject,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    after: str | None = None,
) -> ListResponse[TrainingRunObject]:
    """The project's training runs (training clients of the training API), newest first."""
    page = runs.list_runs(session, project, limit, after)
    return ListResponse[TrainingRunObject].page(runs.views(session, page.items), page.has_more)


@router.get("/{training_run_id}")
def retrieve_training_run(training_run_id: str, session: SessionDep, project: CurrentProject) -> TrainingRunObject:
    return runs.views(session, [get_run(session, project, training_run_id)])[0]


@router.get("/{training_run_id}/metrics")
def list_training_run_metrics(training_run_id: str, session: SessionDep, project: CurrentProject) -> RunMetrics:
    """One row per optimizer step: the loss of its forward_backward calls, the step's gradient norm and learning
    rate, and the metrics the client reported for it."""
    return RunMetrics(data=runs.series(session, project, training_run_id))


@router.post("/{training_run_id}/metrics")
def report_training_run_metrics(
    training_run_id: str, body: ReportMetrics, session: SessionDep, project: CurrentProject
) -> RunStep:
    """Report metrics of one step of your loop (e.g. ``{"step": 3, "metrics": {"reward": 0.75}}``): the dashboard
    draws them beside the loss."""
    return runs.report(session, project, training_run_id, body)


@router.get(
    "/{training_run_id}/checkpoints/{training_checkpoint_id}/content",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {TAR: {}},
            "description": "A sampler checkpoint: adapter_config.json and adapter_model.safetensors (PeftModel); "
            "a training checkpoint: the same and the optimizer's state (optimizer.pt, state.json)",
        },
        302: {"description": "On S3: a presigned URL of the tar, valid for 5 minutes (Location header)"},
    },
)
def download_training_checkpoint(
    training_run_id: str, training_checkpoint_id: str, session: SessionDep, store: StoreDep, project: CurrentProject
) -> Response:
    """A checkpoint of the run, by its ``ftckpt-`` id, as a tar: streamed from a local store, or a 302 to a
    presigned S3 URL (5 minutes), as a job's checkpoint is."""
    ckpt = runs.get_checkpoint(session, project, training_run_id, training_checkpoint_id)
    return tar_response(store, ckpt)
