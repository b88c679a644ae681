"""Training runs as ``/v1`` shows them (no FastAPI): the list, one run with its checkpoints, its per-step series, and
the metrics a client reports for its steps.

The series is computed from the run's requests: each ``optim_step`` closes a step, and the ``forward_backward``
calls (not ``forward``) since the previous one are its loss. Their numbers were kept apart from the results when
the worker posted them (``training_requests.metrics``), so drawing a long run reads no per-token log-probs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.checkpoints import service as checkpoints
from api.core.errors import InvalidRequest
from api.core.pagination import Page, anchor, keyset_page
from api.core.settings import ApiSettings
from api.db.models import (
    TrainingCheckpoint,
    TrainingRequest,
    TrainingRequestStatus,
    TrainingRun,
    TrainingRunMetrics,
    TrainingSession,
    now,
)
from api.training_api.schemas import MAX_REPORTED, ReportMetrics, RunCheckpoint, RunStep, TrainingRunObject
from api.training_api.service import get_run
from api.usage.prices import price_book
from api.usage.schemas import JobUsage
from api.usage.service import session_usage
from runtime.training_api import RequestKind


def views(db: Session, settings: ApiSettings, runs: Sequence[TrainingRun]) -> list[TrainingRunObject]:
    """The runs as /v1 shows them, in a few queries whatever their number (the dashboard lists 100 every 3 s):
    their sessions' states, their optimizer steps counted, their checkpoints, their sessions' usage and cost (the
    runs of one page are one project's)."""
    ids = [r.id for r in runs]
    book = price_book(db, settings, {r.project_id for r in runs})
    used: dict[str, JobUsage] = {}
    for project in {r.project_id for r in runs}:
        mine = [r.session_id for r in runs if r.project_id == project]
        used |= session_usage(db, mine, book.of(project))
    sessions = {
        row.id: row
        for row in db.scalars(select(TrainingSession).where(TrainingSession.id.in_({r.session_id for r in runs})))
    }
    steps: dict[str | None, int] = {
        target: count
        for target, count in db.execute(
            select(TrainingRequest.target, func.count())
            .where(
                TrainingRequest.target.in_(ids),
                TrainingRequest.kind == RequestKind.optim_step,
                TrainingRequest.status == TrainingRequestStatus.done,
            )
            .group_by(TrainingRequest.target)
        )
    }
    ckpts = {
        run_id: [
            RunCheckpoint(
                id=c.id,
                kind=c.kind,
                name=c.name,
                tinker_path=c.tinker_path,
                size_bytes=c.size_bytes,
                created_at=c.created_at,
            )
            for c in rows
        ]
        for run_id, rows in checkpoints.of_runs(db, ids).items()
    }
    return [
        TrainingRunObject(
            id=run.id,
            session_id=run.session_id,
            base_model=run.base_model,
            lora_rank=int(run.lora.get("rank", 0)),
            status=sessions[run.session_id].status,
            error=(sessions[run.session_id].error or {}).get("message"),
            steps=steps.get(run.id, 0),
            created_at=run.created_at,
            last_request_at=run.last_request_at,
            checkpoints=ckpts.get(run.id, []),
            usage=used.get(run.session_id) or JobUsage(),
        )
        for run in runs
    ]


def get_checkpoint(db: Session, project_id: str, run_id: str, checkpoint_id: str) -> TrainingCheckpoint:
    """The project's run's checkpoint (api.checkpoints.service.run_checkpoint), or 404 for either."""
    get_run(db, project_id, run_id)
    return checkpoints.run_checkpoint(db, run_id, checkpoint_id)


def list_runs(db: Session, project_id: str, limit: int, after: str | None) -> Page[TrainingRun]:
    """The project's runs, newest first."""
    query = select(TrainingRun).where(TrainingRun.project_id == project_id)
    start = anchor(
        after, TrainingRun.id == after, TrainingRun.project_id == project_id, missing=f"no training run {after!r}"
    )
    return keyset_page(db, query, [TrainingRun.created_at, TrainingRun.id], limit=limit, descending=True, after=start)


def series(db: Session, project_id: str, run_id: str) -> list[RunStep]:
    get_run(db, project_id, run_id)
    rows = db.execute(
        select(TrainingRequest.kind, TrainingRequest.metrics, TrainingRequest.finished_at)
        .where(
            TrainingRequest.target == run_id,
            TrainingRequest.status == TrainingRequestStatus.done,
            TrainingRequest.kind.in_([RequestKind.forward_backward, RequestKind.optim_step]),
        )
        .order_by(TrainingRequest.seq)
    ).all()
    reported = {
        r.step: r.metrics for r in db.scalars(select(TrainingRunMetrics).where(TrainingRunMetrics.run_id == run_id))
    }
    out: list[RunStep] = []
    loss = tokens = 0.0
    seen = False
    for kind, metrics, finished_at in rows:
        m: dict[str, Any] = metrics or {}
        if kind == RequestKind.forward_backward:
            value, count = _finite(m.get("loss:sum")), _finite(m.get("tokens:sum"))
            if value is not None:
                loss, tokens, seen = loss + value, tokens + (count or 0.0), True
            continue
        step = len(out) + 1
        out.append(
            RunStep(
                step=step,
                loss=loss if seen else None,
                tokens=tokens if seen else None,
                loss_per_token=loss / tokens if seen and tokens else None,
                grad_norm=_finite(m.get("grad_norm:mean")),
                learning_rate=_finite(m.get("learning_rate:mean")),
                reported=reported.pop(step, {}),
                created_at=finished_at,
            )
        )
        loss = tokens = 0.0
        seen = False
    # what the client reported for steps the service has not seen (yet): still drawn
    out += [RunStep(step=s, reported=v) for s, v in sorted(reported.items())]
    return out


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def report(db: Session, project_id: str, run_id: str, body: ReportMetrics) -> RunStep:
    """Merge the client's metrics for one step (a second report of a key replaces its value)."""
    get_run(db, project_id, run_id)
    row = db.get(TrainingRunMetrics, (run_id, body.step))
    if row is None:
        row = TrainingRunMetrics(run_id=run_id, step=body.step, metrics=dict(body.metrics), created_at=now())
        db.add(row)
    else:
        merged = {**row.metrics, **body.metrics}
        if len(merged) > MAX_REPORTED:
            raise InvalidRequest(
                f"step {body.step} would hold {len(merged)} metrics; at most {MAX_REPORTED}", param="metrics"
            )
        row.metrics = merged
    db.commit()
    return RunStep(step=body.step, reported=row.metrics, created_at=row.created_at)
