"""The readiness probe: sample the model ``k`` times on a sample of the training prompts and score every sample
with the job's graders, on the job's own rollout engine and sampling settings (grpo_core.evaluation.readiness reads it).

Run by the worker before training (``preflight`` on the job) and, for the comparison, again with the trained
adapter on the same prompts with the same seed. The probe opens its own copy of the policy and engine
(grpo_core.policy.open_policy) and frees them before training starts: simpler than sharing the trainer's, at the
cost of a second model load (seconds on a small model; a vLLM engine starts twice). Every batch is one
grpo_core.rollout.scored.sample_and_score.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from grpo_core.evaluation.readiness import PromptProbe, ReadinessReport, report
from grpo_core.hardware.device import Placement
from grpo_core.policy import PolicySession, open_policy
from grpo_core.rewards.base import Grader
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.scored import sample_and_score
from grpo_core.schemas.config import GRPOConfig, PreflightConfig
from grpo_core.schemas.environment import EnvironmentSpec


def sample_rows(n_rows: int, prompts: int, seed: int) -> list[int]:
    """0-based indices of the probed rows: all of them when the file is small enough, else a seeded sample, in
    file order (the same rows before and after training)."""
    if prompts >= n_rows:
        return list(range(n_rows))
    return sorted(random.Random(seed).sample(range(n_rows), prompts))


def probe(
    session: PolicySession,
    rows: list[dict[str, Any]],
    indices: list[int],
    graders: Sequence[Grader],
    *,
    samples: int,
    seed: int,
) -> tuple[list[PromptProbe], float]:
    """Each row's ``samples`` rewards, completion lengths and truncation, and the seconds spent grading: rows
    ``indices`` sampled in the batches a training step would draw, with the job's sampling settings, on the
    session's engine (and its environment's agent: each sample a multi-turn episode)."""
    cfg = session.cfg
    out: list[PromptProbe] = []
    grading = 0.0
    per_batch = max(1, cfg.batch_size * cfg.group_size // samples)
    for lo in range(0, len(indices), per_batch):
        batch = indices[lo : lo + per_batch]
        sampling = Sampling(
            samples, cfg.max_completion_tokens, cfg.temperature, top_p=cfg.top_p, seed=seed, first_row=lo * samples
        )
        picked = [rows[i] for i in batch]
        scored = sample_and_score(
            session.engine,
            session.prompts(picked),
            picked,
            graders,
            sampling,
            weights=cfg.reward_weights,
            row_numbers=[i + 1 for i in batch],
            agent=session.agent,
        )
        grading += scored.grading_seconds
        reward = scored.rewards.double()
        lengths, truncated = scored.completion_tokens, scored.truncated
        for j, i in enumerate(batch):
            sl = slice(j * samples, (j + 1) * samples)
            out.append(
                PromptProbe(
                    row=i + 1,
                    rewards=[None if torch.isnan(r) else float(r) for r in reward[sl]],
                    completion_tokens=lengths[sl],
                    truncated=truncated[sl],
                )
            )
    return out, grading


def run_probe(
    cfg: GRPOConfig,
    model_dir: Path,
    rows: list[dict[str, Any]],
    indices: list[int],
    graders: Sequence[Grader],
    *,
    placement: Placement,
    seed: int,
    samples: int,
    adapter_dir: Path | None = None,
    environment: EnvironmentSpec | None = None,
    sandbox_tier: str = "auto",
) -> tuple[list[PromptProbe], float]:
    """Open the policy (with the adapter in ``adapter_dir``, else the fresh one, whose LoRA B is zero: the base
    model) with the job's engine and ``environment`` (grpo_core.policy.open_policy), probe, and free them."""
    with open_policy(
        cfg,
        model_dir,
        placement=placement,
        seed=seed,
        adapter_dir=adapter_dir,
        environment=environment,
        sandbox_tier=sandbox_tier,
    ) as session:
        return probe(session, rows, indices, graders, samples=samples, seed=seed)


def readiness_report(
    cfg: GRPOConfig,
    model_dir: Path,
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    *,
    preflight: PreflightConfig,
    placement: Placement,
    seed: int,
    adapter_dir: Path | None = None,
    environment: EnvironmentSpec | None = None,
    sandbox_tier: str = "auto",
) -> ReadinessReport:
    """The readiness report of the policy (``adapter_dir``'s adapter, else the base model) on the job's seeded
    sample of ``rows`` (``sample_rows``): ``run_probe`` read by grpo_core.evaluation.readiness.report."""
    indices = sample_rows(len(rows), preflight.prompts, seed)
    probes, grading = run_probe(
        cfg,
        model_dir,
        rows,
        indices,
        graders,
        placement=placement,
        seed=seed,
        samples=preflight.samples,
        adapter_dir=adapter_dir,
        environment=environment,
        sandbox_tier=sandbox_tier,
    )
    return report(
        probes,
        max_completion_tokens=cfg.max_completion_tokens,
        pass_threshold=preflight.pass_threshold,
        grader_seconds=grading,
    )
