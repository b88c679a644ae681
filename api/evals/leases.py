"""Eval runs, the worker's side (no FastAPI): claim, post items, finish; the counts are computed here, from the
items, so they can never disagree with what ``output_items`` lists.

A claim is a guarded UPDATE (queued, or in progress with an expired lease: its worker died) that records the
worker's claim id; every later write must carry it. A canceled run's claim id is cleared, so the worker's next
post is refused and it stops.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.core.errors import Conflict, NotFound
from api.core.settings import ApiSettings
from api.db.models import Eval, EvalOutputItem, EvalRun, EvalRunStatus, RegisteredModel, UsageKind, new_id, now
from api.db.session import rows_changed
from api.models.service import source_of
from api.secrets import service as project_secrets
from api.usage import metering
from grpo_core.schemas.graders import named_secrets
from runtime.eval_contract import Criterion, EvalClaim, EvalFinishRequest, EvalItemsRequest, SamplingParams
from runtime.internal import Refusal

LEASE_SECONDS = 600  # renewed by each post of items (every 16 items); the reaper re-queues a run past it
MAX_ATTEMPTS = 3


def claim(session: Session, settings: ApiSettings, run_id: str, worker_claim: str) -> EvalClaim:
    """The run taken by ``worker_claim`` (see the module doc), with what it needs: its model, items and criteria,
    and the values of the project secrets the criteria name (api.secrets.service.values)."""
    t = now()
    changed = rows_changed(
        session,
        update(EvalRun)
        .where(
            EvalRun.id == run_id,
            or_(
                EvalRun.status == EvalRunStatus.queued,
                (EvalRun.status == EvalRunStatus.in_progress) & (EvalRun.lease_expires_at < t),
                (EvalRun.status == EvalRunStatus.in_progress) & (EvalRun.claim_id == worker_claim),  # a retried claim
            ),
        )
        .values(
            status=EvalRunStatus.in_progress,
            claim_id=worker_claim,
            lease_expires_at=t + LEASE_SECONDS,
            started_at=t,
            attempts=EvalRun.attempts + 1,
        ),
    )
    session.commit()
    if not changed:
        raise Conflict(f"eval run {run_id} is not claimable", code=Refusal.stale_claim)
    run = session.get(EvalRun, run_id)
    ev = session.get(Eval, run.eval_id) if run is not None else None
    if run is None or ev is None:
        raise NotFound(f"no eval run {run_id!r}")
    metering.open_attempt(session, _attempt(run))
    session.commit()
    registered = session.get(RegisteredModel, run.target["base"])
    ds = run.data_source
    named = {name for c in ev.testing_criteria for name in named_secrets(c).values()}
    return EvalClaim(
        run_id=run.id,
        base_model=run.target["base"],
        model_source=source_of(registered) if registered is not None else None,
        adapter_key=run.target.get("adapter_key"),
        file_key=run.file_key,
        template=[{"role": m["role"], "content": m["content"]} for m in ds["input_messages"]["template"]],
        sampling=SamplingParams.model_validate(ds.get("sampling_params") or {}),
        criteria=[
            Criterion(
                name=c["name"],
                pass_threshold=c["pass_threshold"],
                grader={k: v for k, v in c.items() if k != "pass_threshold"},
            )
            for c in ev.testing_criteria
        ],
        secrets=project_secrets.values(session, settings, run.project_id, named, f"eval run {run.id}"),
    )


def _attempt(run: EvalRun) -> metering.Attempt:
    """The usage row of the run's current claim (each claim is an attempt, on one device)."""
    return metering.Attempt(UsageKind.eval, run.project_id, run.id, run.attempts)


def _held(session: Session, run_id: str, claim_id: str) -> EvalRun:
    run = session.get(EvalRun, run_id)
    if run is None:
        raise NotFound(f"no eval run {run_id!r}")
    if run.status != EvalRunStatus.in_progress or run.claim_id != claim_id:
        raise Conflict(f"eval run {run_id} is {run.status} and not held by this claim", code=Refusal.stale_claim)
    return run


def record_items(session: Session, run_id: str, body: EvalItemsRequest) -> int:
    """Add the items (a retried post of the same lines adds nothing) and renew the lease; returns how many were
    new."""
    run = _held(session, run_id, body.claim_id)
    t = now()
    run.lease_expires_at = t + LEASE_SECONDS
    added = tokens = 0
    for item in body.items:
        try:
            with session.begin_nested():
                session.add(
                    EvalOutputItem(
                        id=new_id("outputitem"),
                        run_id=run_id,
                        datasource_item_id=item.datasource_item_id,
                        status=item.status,
                        result=item.model_dump(mode="json"),
                    )
                )
            added += 1
            tokens += sum(metering.answer_tokens(s.usage) for s in item.samples)
        except IntegrityError:
            continue
    metering.contact(session, _attempt(run), eval_tokens=tokens)  # an item posted again counts once
    session.commit()
    return added


def finish(session: Session, run_id: str, body: EvalFinishRequest) -> EvalRun:
    run = _held(session, run_id, body.claim_id)
    results = [r for (r,) in session.execute(select(EvalOutputItem.result).where(EvalOutputItem.run_id == run_id))]
    run.result_counts = {
        "total": len(results),
        "errored": sum(r["status"] == "error" for r in results),
        "failed": sum(r["status"] == "fail" for r in results),
        "passed": sum(r["status"] == "pass" for r in results),
    }
    run.per_testing_criteria_results = _per_criterion(results)
    run.usage = _usage(results)
    run.status = body.status
    run.finished_at = now()
    metering.contact(session, _attempt(run))
    if body.status == EvalRunStatus.failed:
        run.error = {"code": body.error_code or "run_failed", "message": body.error_message or "the run failed"}
    session.commit()
    return run


def _per_criterion(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per criterion, items where it passed every sample, and the rest (an error counts as a failure)."""
    passed: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    order: list[str] = []
    for r in results:
        by: dict[str, bool] = {}
        for c in r["results"]:
            by[c["name"]] = by.get(c["name"], True) and bool(c["passed"])
            if c["name"] not in order:
                order.append(c["name"])
        for name, ok in by.items():
            (passed if ok else failed)[name] += 1
    return [{"testing_criteria": n, "passed": passed[n], "failed": failed[n]} for n in order]


def _usage(results: list[dict[str, Any]]) -> dict[str, int]:
    out = {"invocation_count": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "cached_tokens": 0}
    for r in results:
        for s in r["samples"]:
            out["invocation_count"] += 1
            for k in ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens"):
                out[k] += int(s["usage"].get(k, 0))
    return out


def reap(session: Session, stale_before: int) -> list[str]:
    """The reaper's rule for eval runs (api.reaper): a run whose worker stopped renewing its lease is
    queued again (failed after MAX_ATTEMPTS claims), and a queued run not claimed since ``stale_before`` is rung
    again. Returns the runs to ring, after the caller commits."""
    t = now()
    ring: list[str] = []
    lost = select(EvalRun).where(EvalRun.status == EvalRunStatus.in_progress, EvalRun.lease_expires_at < t)
    for run in session.scalars(lost).all():
        if run.attempts >= MAX_ATTEMPTS:
            run.status, run.finished_at, run.claim_id = EvalRunStatus.failed, t, None
            run.error = {"code": "attempts_exhausted", "message": f"the worker was lost {run.attempts} times"}
        else:
            run.status, run.claim_id, run.enqueued_at = EvalRunStatus.queued, None, t
            ring.append(run.id)
    waiting = select(EvalRun).where(
        EvalRun.status == EvalRunStatus.queued, or_(EvalRun.enqueued_at.is_(None), EvalRun.enqueued_at < stale_before)
    )
    for run in session.scalars(waiting).all():
        run.enqueued_at = t
        ring.append(run.id)
    return ring
