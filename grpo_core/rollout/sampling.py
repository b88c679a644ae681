"""One step's training batch: sample, score, filter, and the advantages that go with it.

The sampling strategies are config values, applied in this order per sampling round:

1. sample ``gfpo_sample_size or group_size`` completions per prompt from the rollout engine;
2. score them with every grader (grpo_core.rewards.combine);
3. GFPO (Shrivastava et al., 2025, "Sample More to Think Less"): keep the ``group_size`` best of each group by
   ``gfpo_metric`` (shortest, or highest reward per token); the rest are dropped before the advantages, so the
   group baseline is the kept samples' (as TRL's GFPOTrainer did);
4. dynamic sampling (DAPO, Yu et al., 2025, §3.2): drop groups whose grader rewards are all equal — their
   advantages are 0 and they only dilute the batch — and sample the next prompts until ``batch_size`` groups are
   kept or ``dynamic_sampling_max_rounds`` is reached (then the step trains on what it has, and says so in its
   metrics; a round with no signal at all keeps its groups so the step still has samples to report).

Then DAPO's soft overlong punishment is added as one more reward column, and advantages are computed over the
final batch. Every round's prompts come from the data cursor, so a resumed run continues with the same prompts.

With several ranks (grpo_core.hardware.distributed) step 1 and 2 run on each rank's contiguous share of the round's
prompts and their results are all-gathered, so steps 3 and 4, the shaping and the advantages see the whole round on
every rank, in one-process order: the batch, and every decision taken on it, is the same as one process's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from grpo_core.data.rows import batches
from grpo_core.errors import GraderFailed, UserError
from grpo_core.hardware.device import HOST
from grpo_core.hardware.distributed import World, all_gather_objects
from grpo_core.rewards.base import Grader
from grpo_core.rewards.combine import Scores, combined_advantages, weighted_total
from grpo_core.rollout.agent.episodes import AgentRollouts
from grpo_core.rollout.batch import Rollout, concat_rollouts, empty_rollout
from grpo_core.rollout.engines.base import RolloutEngine, Sampling
from grpo_core.rollout.scored import sample_and_score
from grpo_core.rollout.shaping import soft_overlong_penalty
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.metrics import SamplingStats


class PromptCursor:
    """Row-index batches with a position that checkpoints save: step k's prompts survive a resume even when
    dynamic sampling consumed more than one batch per step."""

    def __init__(self, n_rows: int, batch_size: int, seed: int, position: int = 0) -> None:
        self.position = position
        self._it: Iterator[list[int]] = batches(n_rows, batch_size, seed, start_step=position)

    def next(self) -> list[int]:
        self.position += 1
        return next(self._it)


@dataclass
class StepBatch:
    ro: Rollout  # n_groups × group_size rows, grouped by prompt
    row_idx: list[int]  # training-row index of each group
    scores: Tensor  # (B, K) grader scores, NaN where a grader could not score
    grader_names: list[str]
    overlong: Tensor  # (B,) shaping added to the reward (0 when off)
    rewards: Tensor  # (B,) weighted total incl. shaping; NaN = unscorable
    adv: Tensor  # (B,)
    errors: list[str]
    stats: SamplingStats  # sampling rounds; groups sampled, dropped for no signal, trained on
    sampling_seconds: float = 0.0  # over every round: sampling this rank's share
    scoring_seconds: float = 0.0  # over every round: scoring it, and gathering the ranks' shares
    error_rates: dict[str, float] = field(default_factory=dict)  # per grader, over every sample scored
    sub_scores: dict[str, float | None] = field(default_factory=dict)  # a multi grader's parts: mean score


def gfpo_keep(total: Tensor, lengths: Tensor, sampled: int, keep: int, metric: str) -> Tensor:
    """Row indices of the ``keep`` best of each group of ``sampled`` (in row order within each group).

    ``length``: the shortest; ``reward_per_token``: the highest reward / length (unscorable samples last).
    Ties go to the earlier sample, so the choice is deterministic.
    """
    if metric == "length":
        score = -lengths.double()
    elif metric == "reward_per_token":
        score = torch.nan_to_num(total.double() / lengths.clamp(min=1).double(), nan=float("-inf"))
    else:
        raise ValueError(f"unknown GFPO metric {metric!r}")
    order = torch.sort(score.view(-1, sampled), dim=1, descending=True, stable=True).indices[:, :keep]
    local = torch.sort(order, dim=1).values
    return (local + torch.arange(0, total.numel(), sampled, device=HOST).unsqueeze(1)).flatten()


def groups_with_signal(total: Tensor, group_size: int) -> Tensor:
    """(n_groups,) bool: the group's scorable rewards are not all equal (DAPO's dynamic-sampling filter)."""
    r = total.double().view(-1, group_size)
    nan = torch.isnan(r)
    hi = torch.where(nan, float("-inf"), r).amax(dim=1)
    lo = torch.where(nan, float("inf"), r).amin(dim=1)
    return hi > lo


def rows_of_groups(keep_groups: Tensor, group_size: int) -> Tensor:
    """The row indices of groups ``keep_groups`` (rows grouped by prompt, ``group_size`` each), in order."""
    return (keep_groups.unsqueeze(1) * group_size + torch.arange(group_size, device=HOST)).flatten()


@dataclass
class _Rounds:
    """What a step's sampling rounds gathered: the groups kept, each round's (rollout, row indices, scores), and the
    counts its metrics report."""

    parts: list[tuple[Rollout, list[int], Tensor]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_counts: dict[str, int] = field(default_factory=dict)  # per grader, over every sample scored
    sub_scores: dict[str, list[float | None]] = field(default_factory=dict)
    rounds: int = 0
    sampled: int = 0  # groups sampled
    dropped: int = 0  # groups dropped for no signal
    sampling_seconds: float = 0.0
    scoring_seconds: float = 0.0

    def groups(self) -> int:
        return sum(len(p[1]) for p in self.parts)


def collect_batch(
    cfg: GRPOConfig,
    engine: RolloutEngine,
    prompts: list[str],
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    cursor: PromptCursor,
    *,
    seed: int,
    step: int,
    world: World | None = None,
    agent: AgentRollouts | None = None,
) -> StepBatch:
    """Sample and score until the step's batch is complete; see the module doc for the order of strategies.
    ``agent``: the job's environment; each sample is then a multi-turn episode (grpo_core.rollout.agent.episodes)."""
    world = world or World()
    G = cfg.group_size
    n_sample = cfg.gfpo_sample_size or G
    weights = cfg.reward_weights or [1.0] * len(graders)
    if len(weights) != len(graders):
        raise UserError(f"reward_weights has {len(weights)} weights for {len(graders)} graders")
    got = _Rounds()
    while True:
        idx = cursor.next()
        t0 = time.perf_counter()
        draw = random.Random(f"{seed}:{step}:{got.rounds}").randrange(2**31)
        sampling = Sampling(n_sample, cfg.max_completion_tokens, cfg.temperature, cfg.top_p, seed=draw)
        ro, sc, sampled_in = _sample_and_score(engine, prompts, rows, graders, idx, sampling, world, agent)
        got.rounds += 1
        got.sampled += len(idx)
        got.sampling_seconds += sampled_in
        got.scoring_seconds += time.perf_counter() - t0 - sampled_in
        got.errors += sc.errors
        _check_error_rate(sc.error_counts, sc.errors, len(ro.texts), cfg.max_grader_error_rate, step)
        for name, n_err in sc.error_counts.items():
            got.error_counts[name] = got.error_counts.get(name, 0) + n_err
        got.sub_scores = {k: got.sub_scores.get(k, []) + v for k, v in sc.sub_scores.items()}
        if torch.isnan(sc.matrix).all():
            raise UserError(f"no grader applied to any sample of step {step} (every score was None)")
        matrix = sc.matrix
        if n_sample != G:
            keep = gfpo_keep(weighted_total(matrix, weights), ro.completion_mask.sum(1), n_sample, G, cfg.gfpo_metric)
            ro, matrix = ro.select(keep), matrix[keep]
        if not cfg.dynamic_sampling:
            got.parts.append((ro, idx, matrix))
            break
        signal = groups_with_signal(weighted_total(matrix, weights), G)
        got.dropped += int((~signal).sum())
        if signal.any() or (not got.parts and got.rounds >= cfg.dynamic_sampling_max_rounds):
            kept = torch.nonzero(signal).flatten() if signal.any() else torch.arange(len(idx), device=HOST)
            rows_kept = rows_of_groups(kept, G)
            got.parts.append((ro.select(rows_kept), [idx[int(k)] for k in kept], matrix[rows_kept]))
        if got.groups() >= cfg.batch_size or got.rounds >= cfg.dynamic_sampling_max_rounds:
            break
    return _step_batch(cfg, got, graders, weights, agent)


def _step_batch(
    cfg: GRPOConfig, got: _Rounds, graders: Sequence[Grader], weights: list[float], agent: AgentRollouts | None
) -> StepBatch:
    """The step's batch from its rounds: the first ``batch_size`` groups kept, DAPO's overlong shaping as one more
    reward column, and the advantages over the whole batch."""
    G = cfg.group_size
    ro = concat_rollouts([p[0] for p in got.parts])
    row_idx = [i for p in got.parts for i in p[1]][: cfg.batch_size]
    n = len(row_idx) * G
    ro = ro.select(torch.arange(n, device=HOST)) if ro.completion_ids.shape[0] > n else ro
    matrix = torch.cat([p[2] for p in got.parts])[:n]
    lengths = ro.completion_mask.sum(dim=1)
    overlong = torch.zeros(n, device=HOST)
    if cfg.overlong_buffer_fraction:
        # an episode's length is its model tokens over all turns: measured against the episode's budget
        limit = agent.spec.max_total_tokens if agent is not None else cfg.max_completion_tokens
        buffer = max(1, round(cfg.overlong_buffer_fraction * limit))
        overlong = cfg.overlong_penalty * soft_overlong_penalty(lengths, limit, buffer)
    unscorable = torch.isnan(matrix).all(dim=1)  # shaping alone never makes a sample scorable
    full = torch.cat([matrix, torch.where(unscorable, torch.nan, overlong.double()).unsqueeze(1)], dim=1)
    full_w = [*weights, 1.0]
    adv = combined_advantages(
        full,
        full_w,
        G,
        aggregation=cfg.reward_aggregation,
        estimator=cfg.advantage_estimator,
        scale=cfg.scale_rewards,
    )
    n_scored = got.sampled * (cfg.gfpo_sample_size or G)
    stats = SamplingStats(
        sampling_rounds=got.rounds, groups_sampled=got.sampled, groups_dropped=got.dropped, groups_trained=len(row_idx)
    )
    return StepBatch(
        ro=ro,
        row_idx=row_idx,
        scores=matrix,
        grader_names=[g.name for g in graders],
        overlong=overlong,
        rewards=weighted_total(full, full_w),
        adv=adv,
        errors=got.errors,
        stats=stats,
        sampling_seconds=got.sampling_seconds,
        scoring_seconds=got.scoring_seconds,
        error_rates={k: v / n_scored for k, v in got.error_counts.items()},
        sub_scores={k: _mean(v) for k, v in got.sub_scores.items()},
    )


def _sample_and_score(
    engine: RolloutEngine,
    prompts: list[str],
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    idx: list[int],
    sampling: Sampling,
    world: World,
    agent: AgentRollouts | None = None,
) -> tuple[Rollout, Scores, float]:
    """The round's rollout and scores for prompts ``idx``, this rank's share sampled and scored here
    (grpo_core.rollout.scored.sample_and_score) and the rest gathered from the other ranks (in rank order =
    one-process order); also how long this rank's sampling took."""
    lo, hi = world.shard(len(idx))
    mine = idx[lo:hi]  # empty on some ranks when an epoch's short last batch has fewer prompts than ranks
    if mine:
        share = replace(sampling, first_row=lo * sampling.group_size)
        if world.distributed:
            share = replace(share, step_prompts=tuple(prompts[i] for i in idx))
        mine_rows = [rows[i] for i in mine]
        numbers = [i + 1 for i in mine]  # 1-based training-file rows, which grader errors name
        scored = sample_and_score(
            engine, [prompts[i] for i in mine], mine_rows, graders, share, row_numbers=numbers, agent=agent
        )
        ro, sc, sampling_seconds = scored.rollout, scored.scores, scored.sampling_seconds
    else:
        ro, sampling_seconds = empty_rollout(), 0.0
        names = [g.name for g in graders]
        sc = Scores(torch.zeros(0, len(graders), dtype=torch.float64, device=HOST), names, [], dict.fromkeys(names, 0))
    if not world.distributed:
        return ro, sc, sampling_seconds
    parts = all_gather_objects(world, (ro, sc))
    return concat_rollouts([p[0] for p in parts]), _concat_scores([p[1] for p in parts]), sampling_seconds


def _concat_scores(parts: list[Scores]) -> Scores:
    """One round's scores from the ranks' shares (rows in rank order; error counts added)."""
    counts: dict[str, int] = {}
    subs: dict[str, list[float | None]] = {}
    for p in parts:
        for name, n in p.error_counts.items():
            counts[name] = counts.get(name, 0) + n
        for name, vals in p.sub_scores.items():
            subs[name] = subs.get(name, []) + vals
    matrix = torch.cat([p.matrix for p in parts])
    return Scores(matrix, parts[0].names, [e for p in parts for e in p.errors], counts, subs)


def _check_error_rate(counts: dict[str, int], errors: list[str], n: int, limit: float, step: int) -> None:
    """Fail the job when a grader errored on more than ``limit`` of this round's samples, with its first error."""
    for name, n_err in counts.items():
        if n and n_err / n > limit:
            first = next((e for e in errors if e.startswith(f"grader {name!r}")), "")
            raise GraderFailed(
                f"grader {name!r} failed on {n_err / n:.0%} of completions at step {step} "
                f"(max_grader_error_rate={limit:g}); first error: {first}"
            )


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None
