"""The readiness probe: sample the model ``k`` times on a sample of the training prompts and score every sample
with the job's graders, on the job's own rollout engine and sampling settings (grpo_core.readiness reads it).

Run by the worker before training (``preflight`` on the job) and, for the comparison, again with the trained
adapter on the same prompts with the same seed. The probe loads its own copy of the policy and engine and frees
them before training starts: simpler than sharing the trainer's, at the cost of a second model load (seconds on
a small model; a vLLM engine starts twice).
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from grpo_core.config import GRPOConfig
from grpo_core.data import prompt_text
from grpo_core.device import Placement
from grpo_core.engines.base import Sampling
from grpo_core.readiness import PromptProbe
from grpo_core.rewards.base import Grader
from grpo_core.rewards.combine import score_samples, weighted_total


def sample_rows(n_rows: int, prompts: int, seed: int) -> list[int]:
    """0-based indices of the probed rows: all of them when the file is small enough, else a seeded sample, in
    file order (the same rows before and after training)."""
    if prompts >= n_rows:
        return list(range(n_rows))
    return sorted(random.Random(seed).sample(range(n_rows), prompts))


def probe(
    cfg: GRPOConfig,
    tokenizer: Any,
    engine: Any,
    rows: list[dict[str, Any]],
    indices: list[int],
    graders: Sequence[Grader],
    *,
    samples: int,
    seed: int,
    agent: Any = None,
) -> tuple[list[PromptProbe], float]:
    """Each row's ``samples`` rewards, completion lengths and truncation, and the seconds spent grading.
    ``agent``: the job's environment (grpo_core.agent.episodes); each sample is then a multi-turn episode."""
    out: list[PromptProbe] = []
    grading = 0.0
    per_batch = max(1, cfg.batch_size * cfg.group_size // samples)
    weights = cfg.reward_weights or [1.0] * len(graders)
    for lo in range(0, len(indices), per_batch):
        batch = indices[lo : lo + per_batch]
        sampling = Sampling(
            samples, cfg.max_completion_tokens, cfg.temperature, top_p=cfg.top_p, seed=seed, first_row=lo * samples
        )
        if agent is not None:
            ro = agent.run([agent.prompt(rows[i]) for i in batch], [rows[i] for i in batch], sampling)
        else:
            ro = engine.generate([prompt_text(rows[i], tokenizer, cfg.chat_template_kwargs) for i in batch], sampling)
        rows_g = [rows[i] for i in batch for _ in range(samples)]
        numbers = [i + 1 for i in batch for _ in range(samples)]
        extras = [e.grader_view() for e in ro.episodes] if ro.episodes is not None else None
        t = time.perf_counter()
        scores = score_samples(graders, ro.texts, rows_g, numbers, extras)
        grading += time.perf_counter() - t
        reward = weighted_total(scores.matrix, weights).double()
        lengths = ro.completion_mask.sum(dim=1).tolist()
        truncated = ro.truncated.tolist()
        for j, i in enumerate(batch):
            sl = slice(j * samples, (j + 1) * samples)
            out.append(
                PromptProbe(
                    row=i + 1,
                    rewards=[None if torch.isnan(r) else float(r) for r in reward[sl]],
                    completion_tokens=[int(n) for n in lengths[sl]],
                    truncated=[bool(b) for b in truncated[sl]],
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
    environment: Any = None,
    sandbox_tier: str = "auto",
) -> tuple[list[PromptProbe], float]:
    """Load the policy (with the adapter in ``adapter_dir``, else the fresh one, whose LoRA B is zero: the base
    model), start the job's engine (and its ``environment``'s sandbox, grpo_core.agent), probe, and free them."""
    from grpo_core.agent.episodes import make_agent
    from grpo_core.checkpoint import load_adapter_weights
    from grpo_core.rollout import eos_ids
    from grpo_core.trainer import _engine, _resolve_execution, load_policy

    cfg = cfg.model_copy(update={"device": str(placement.device), "precision": placement.precision})
    model: Any = None
    engine: Any = None
    agent: Any = None
    try:
        model, tokenizer = load_policy(model_dir, cfg, seed)
        if adapter_dir is not None:
            load_adapter_weights(model, adapter_dir)
        cfg = _resolve_execution(cfg, model, placement)
        tokens = environment.max_total_tokens if environment is not None else cfg.max_completion_tokens
        engine = _engine(cfg, model, tokenizer, model_dir, seed, placement.autocast, tokens)
        if adapter_dir is not None:
            engine.sync(model, 1)
        if environment is not None:
            agent = make_agent(
                environment, tokenizer, eos_ids(model, tokenizer), cfg.chat_template_kwargs, sandbox_tier
            )
            agent.engine = engine
        with torch.no_grad():
            return probe(cfg, tokenizer, engine, rows, indices, graders, samples=samples, seed=seed, agent=agent)
    finally:  # freed whatever failed: training (or the next job) needs the memory
        if agent is not None:
            agent.runner.close()
        if engine is not None:
            engine.close()
        del engine, model
        gc.collect()
        if placement.is_cuda:
            torch.cuda.empty_cache()
