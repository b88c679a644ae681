"""The readiness probe around a job's training (``hyperparameters.preflight``), as glue: the report before, the
rows it drops, and the report on the trained adapter after, each posted to the API (grpo_core.evaluation.probe opens
the policy, samples and scores; grpo_core.evaluation.readiness reads the result).

Before training the base model is probed on a seeded sample of the training prompts and the report posted; with
``drop_zero_variance_prompts`` the rows without signal are removed from this node's copy of the training file
and the job keeps its planned number of steps (``max_steps`` pinned to the job's ``total_steps``). The API keeps
the dropped rows, so a resumed attempt, and every other node of a multi-node job, drops the same rows from its
claim without probing again.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_core.data.rows import read_jsonl
from grpo_core.evaluation.readiness import ReadinessReport, zero_variance_rows
from grpo_core.schemas.config import PreflightConfig
from runtime import internal as api
from worker.job import Inputs, Job, make_graders
from worker.settings import WorkerSettings

Post = Callable[[api.ReadinessRequest], None]


def probe_report(
    claim: api.ClaimResponse,
    job: Job,
    pre: PreflightConfig,
    rows: list[dict[str, Any]],
    settings: WorkerSettings,
    adapter_dir: Path | None = None,
) -> ReadinessReport:
    """The readiness report of the base model (or ``adapter_dir``'s adapter) on the job's sample of ``rows``,
    with this worker's graders and sandbox (grpo_core.evaluation.probe.readiness_report)."""
    from grpo_core.evaluation.probe import readiness_report
    from grpo_core.hardware.device import resolve_placement

    graders = make_graders(job, settings, claim)
    try:
        return readiness_report(
            job.cfg,
            job.model_dir,
            rows,
            graders,
            preflight=pre,
            placement=resolve_placement(job.cfg.device, job.cfg.precision),
            seed=claim.seed,
            adapter_dir=adapter_dir,
            environment=job.environment,
            sandbox_tier=settings.reward_sandbox,
        )
    finally:
        for g in graders:
            g.close()


def _original(inputs: Inputs) -> Path:
    return inputs.train.with_name(inputs.train.name + ".orig")


def drop_rows(job: Job, total_steps: int, inputs: Inputs, dropped: list[int]) -> Job:
    """Rewrite this node's training file without the 1-based ``dropped`` rows; the job, with ``max_steps`` pinned
    to its planned ``total_steps`` (fewer rows must not mean fewer steps)."""
    if not dropped:
        return job
    gone = set(dropped)
    original = _original(inputs)
    if not original.is_file():  # the probe after training samples the same rows of the whole file
        shutil.copyfile(inputs.train, original)
    lines = [ln for ln in original.read_text().splitlines() if ln.strip()]
    kept = [ln for i, ln in enumerate(lines, start=1) if i not in gone]
    inputs.train.write_text("\n".join(kept) + "\n")
    return job.model_copy(update={"cfg": job.cfg.model_copy(update={"max_steps": total_steps})})


def before_training(
    claim: api.ClaimResponse, job: Job, inputs: Inputs, settings: WorkerSettings, post: Post, say: Callable[[str], None]
) -> Job:
    """Probe and post the report unless an earlier attempt did; drop the rows without signal if asked. Returns
    the job to train."""
    from grpo_core.errors import UserError

    pre = job.cfg.preflight
    assert pre is not None
    dropped = claim.readiness_dropped_rows
    if dropped is None:
        rows = read_jsonl(inputs.train)
        say(f"Probing readiness: the base model, {pre.samples} samples on {min(pre.prompts, len(rows))} prompts")
        rep = probe_report(claim, job, pre, rows, settings)
        dropped = sorted(zero_variance_rows(rep)) if pre.drop_zero_variance_prompts and not pre.only else []
        if len(dropped) == len(rows):  # the report is kept (nothing dropped), then the job fails with the reason
            post(api.ReadinessRequest(epoch=claim.epoch, phase="before", report=rep, dropped_rows=[]))
            raise UserError(
                "every training prompt was probed and none gives GRPO a signal (all rewards equal within each "
                "group): nothing to train on; see the readiness report's findings (GET …/readiness)"
            )
        post(api.ReadinessRequest(epoch=claim.epoch, phase="before", report=rep, dropped_rows=dropped))
    return drop_rows(job, claim.total_steps, inputs, dropped)


def after_training(
    claim: api.ClaimResponse,
    job: Job,
    inputs: Inputs,
    settings: WorkerSettings,
    adapter_dir: Path,
    post: Post,
    say: Callable[[str], None],
) -> None:
    """Probe the trained adapter on the same prompts (the original file's rows) and post it for comparison."""
    pre = job.cfg.preflight
    assert pre is not None
    original = _original(inputs)
    path = original if original.is_file() else inputs.train
    rows = read_jsonl(path)
    say("Probing readiness again: the trained adapter, on the same prompts")
    rep = probe_report(claim, job, pre, rows, settings, adapter_dir=adapter_dir)
    post(api.ReadinessRequest(epoch=claim.epoch, phase="after", report=rep))
