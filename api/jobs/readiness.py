"""The readiness reports of a job (no FastAPI): what the worker's probe posts, and what users read.

The worker probes the base model before training (grpo_core.evaluation.probe) and the trained adapter after it; the API
keeps both on the job row, compares them per prompt when the second arrives (grpo_core.evaluation.readiness.compare),
and puts the verdict, its findings and the comparison in the event log, so ``rft jobs follow``, the dashboard and
``GET …/events`` show them as they happen.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from api.db.models import Job
from api.jobs.events import add_event
from api.jobs.leases import fence
from grpo_core.evaluation.readiness import ReadinessReport, compare
from runtime.internal import ReadinessRequest

_LEVEL = {"ready": "info", "weak_signal": "warn", "not_ready": "warn"}


def record(session: Session, job_id: str, body: ReadinessRequest, lease_seconds: int) -> Job:
    """Keep one probe's report (fenced like every worker write) and say what it found in the job's events."""
    job = fence(session, job_id, body.epoch, lease_seconds)
    state: dict[str, Any] = dict(job.readiness or {})
    rep = body.report
    state[body.phase] = rep.model_dump(mode="json")
    if body.phase == "before":
        state["dropped_rows"] = body.dropped_rows
        head = (
            f"Readiness before training ({rep.prompts} prompts × {rep.samples_per_prompt} samples of the base "
            f"model): {rep.verdict.replace('_', ' ')}"
        )
        add_event(session, job_id, f"{head}. {'; '.join(rep.findings)}", level=_LEVEL[rep.verdict])
        if body.dropped_rows:
            add_event(
                session,
                job_id,
                f"Dropped {len(body.dropped_rows)} of {rep.prompts} probed prompts whose rewards were all equal "
                "(no GRPO signal); training runs its planned steps on the rest",
            )
    elif "before" in state:
        cmp = compare(ReadinessReport.model_validate(state["before"]), rep)
        state["comparison"] = cmp.model_dump(mode="json")
        add_event(session, job_id, f"Readiness after training, on the same prompts: {cmp.summary}")
    job.readiness = state
    session.commit()
    return job
