"""The GRPO loop: one visible ``while`` over optimizer steps.

Each step: collect a scored batch (grpo_core.rollout.sampling: the rollout engine samples G completions per prompt, the
graders score them, GFPO / dynamic sampling filter, advantages) -> per-token log-probs of the completions under
the policy (and, when β > 0, under the base model: the same weights with the LoRA adapter disabled, so no second
copy of the model) -> clipped surrogate + β·KL (grpo_core.update.step, grpo_core.update.loss) -> AdamW on the LoRA
weights, μ = ``num_iterations`` times -> the engine is synced to the new weights -> metrics, validation, checkpoint.

With μ = 1 the rollout is used for exactly one optimizer step, so π_old = π_θ at update time and no extra
forward pass is spent on old log-probs (ratio = exp(logp − logp.detach())). The model is kept in eval mode
throughout (no dropout), so that ratio is exactly 1 in value. Variants are config values handed to small pure
functions; the loop has no branch per algorithm.

What the loop runs on is built once before it (grpo_core.run.build_run: the policy, the engine, the resolved config).
The trainer never knows about HTTP, queues or object stores: progress leaves through ``Callbacks`` (grpo_core.run).

Under torchrun the same loop runs on every rank (grpo_core.hardware.distributed): sampling and the update are split, the
batch and the gradient are the one-process ones, and rank 0 alone reports and writes checkpoints.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from grpo_core.checkpoint import rng_state, save_checkpoint
from grpo_core.evaluation.validation import reward_sums, standard_error
from grpo_core.hardware import distributed
from grpo_core.hardware.device import Placement, peak_memory_gb, reset_peak_memory, resolve_placement
from grpo_core.hardware.distributed import World, all_gather_objects, any_rank
from grpo_core.hardware.memory import out_of_memory
from grpo_core.hardware.rollout_placement import DeviceSplit
from grpo_core.metrics import step_metrics
from grpo_core.rewards.base import Grader
from grpo_core.run import Callbacks, MainRank, Run, RunInputs, build_run, check_layout
from grpo_core.sampler_process import engine_notes
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.metrics import MemoryStats, StepMetrics
from grpo_core.update.step import old_logprobs, policy_update


@dataclass
class TrainResult:
    steps_done: int
    total_steps: int
    stopped: bool  # should_stop() ended the run early
    final_checkpoint: Path | None
    last_metrics: StepMetrics | None = None


def train(
    cfg: GRPOConfig,
    model_dir: Path,
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    *,
    callbacks: Callbacks,
    work_dir: Path,
    seed: int = 0,
    resume_from: Path | None = None,
    valid_rows: list[dict[str, Any]] | None = None,
    placement: Placement | None = None,
    world: World | None = None,
    base_name: str | None = None,
    environment: EnvironmentSpec | None = None,
    sandbox_tier: str = "auto",
    split: DeviceSplit | None = None,
) -> TrainResult:
    """Run GRPO on ``rows`` and return when done, stopped, or raise (UserError for the user's mistakes, its
    subclass DeviceOutOfMemory when the device runs out). ``placement``: where to train, when the caller resolved
    it already (the worker names it in its first event); by default resolved here from ``cfg``. ``world``: this
    process's rank among the job's (default: torchrun's environment, or one process); the process group is
    joined here unless the caller did. ``base_name``: what the adapter names as its base (grpo_core.policy.load_policy).
    ``environment``: the job's tools or ``respond`` (grpo_core.rollout.agent), run in a ``sandbox_tier`` sandbox; every
    sample is then a multi-turn episode. ``split``: the node's devices the sampler takes for itself
    (``resources.rollout_devices``, at ``max_staleness`` > 0; grpo_core.hardware.rollout_placement)."""
    world = world or World.from_env()
    check_layout(cfg, rows, world, split)
    inputs = RunInputs(
        model_dir, rows, graders, work_dir, seed, resume_from, valid_rows, base_name, environment, sandbox_tier, split
    )
    placement = placement or resolve_placement(cfg.device, cfg.precision, world)
    with distributed.process_group(world, placement.device):
        if any_rank(world, placement.precision == "fp32", placement.device) and placement.precision != "fp32":
            # one precision for all: each rank measured its CPU's bf16 speed-up itself, and one fell short
            placement = replace(placement, precision="fp32", precision_reason="another rank's CPU chose fp32")
        # where it trains, as the policy session places it (grpo_core.policy.open_policy)
        cfg = cfg.model_copy(update={"device": str(placement.device), "precision": placement.precision})
        with contextlib.ExitStack() as cleanup:  # what the run starts (engine, sampler, sandbox) ends with it
            cleanup.callback(torch.set_num_threads, torch.get_num_threads())  # the sampler may take some cores
            run = build_run(cfg, inputs, placement, world, MainRank(callbacks, world, placement.device), cleanup)
            return _loop(run)


def _loop(run: Run) -> TrainResult:
    """Every step of the run (``turns``) in a row."""
    steps = turns(run)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        result: TrainResult = done.value
        return result


def turns(run: Run) -> Generator[None, None, TrainResult]:
    """The optimizer steps, one per turn (each ``next`` runs one; a pool of tenants interleaves several runs'
    turns, grpo_core.pool): stop if asked (keeping every finished step), step, validate, report, checkpoint."""
    cfg, state, callbacks = run.cfg, run.state, run.callbacks
    last: StepMetrics | None = None
    final_ckpt: Path | None = None
    saved_step = state.step  # the newest step whose state is in a checkpoint
    while state.step < run.total:
        if callbacks.should_stop():
            if last is not None and state.step > saved_step:  # keep every finished step: resume from here
                final_ckpt = _save(run)
                callbacks.on_checkpoint(state.step, final_ckpt, last, final=False, best=False)
            return TrainResult(state.step, run.total, True, final_ckpt, last)
        last = _step(run)
        best = False
        valid_rows = run.inputs.valid_rows
        if valid_rows and (state.step == run.total or (cfg.eval_interval and state.step % cfg.eval_interval == 0)):
            best = _validate(run, valid_rows, last)
        last.memory = _memory(run.placement, run.world)  # the step's peak: sampling, update, sync and validation
        last.warnings = run.health.check(last)
        callbacks.on_step(last)
        for note in engine_notes(run.engine):  # a sampler process that died and was started again
            callbacks.on_message(note, "warn")
        for warning in last.warnings:
            callbacks.on_message(warning, "warn")
        is_last = state.step == run.total
        if is_last or best or (cfg.checkpoint_interval and state.step % cfg.checkpoint_interval == 0):
            path = _save(run)
            callbacks.on_checkpoint(state.step, path, last, final=is_last, best=best)
            final_ckpt, saved_step = path, state.step
        if not is_last:
            yield
    return TrainResult(state.step, run.total, False, final_ckpt, last)


def _step(run: Run) -> StepMetrics:
    """One optimizer step: the step's batch (sampled in turn, or ahead by the producer), π_old, μ updates on it, the
    engine synced to the new weights; its metrics."""
    cfg, state, placement = run.cfg, run.state, run.placement
    t0 = time.perf_counter()
    reset_peak_memory(placement.device)
    try:
        ready = run.source.next(state.step + 1)
    except torch.OutOfMemoryError:
        raise out_of_memory(state.step + 1, "sampling", placement, cfg) from None  # frees the frames
    t1 = time.perf_counter()
    batch = ready.batch
    waited = waited_on_others(run.engine)  # a pool's tenant: the step's timing is its own work
    t0, batch.sampling_seconds = t0 + waited, max(0.0, batch.sampling_seconds - waited)
    run.engine.suspend()  # what sampling holds on the device goes to the update (vLLM's sleep mode)
    ro = batch.ro
    # DAPO's overlong filtering: a truncated completion keeps its place in the group but gets no loss.
    if cfg.mask_truncated_completions:
        ro = replace(ro, completion_mask=ro.completion_mask * (~ro.truncated).unsqueeze(1))
    autocast, world, passes = placement.autocast, run.world, run.passes
    # π_old: the sampling policy. With μ = 1 it equals π_θ at update time (logp.detach(), no extra pass).
    try:
        old = old_logprobs(run.model, ro, batch.adv, cfg, autocast, world, passes) if cfg.num_iterations > 1 else None
        for _ in range(cfg.num_iterations):
            run.optimizer.zero_grad(set_to_none=True)
            update = run.update or policy_update  # a pool's tenant updates through its pool (grpo_core.joint)
            sums = update(run.model, ro, batch.adv, cfg, autocast, old, world, passes)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(run.params, cfg.max_grad_norm))
            if not math.isfinite(grad_norm):
                raise RuntimeError(f"non-finite gradient norm at step {state.step + 1}; lower learning_rate")
            run.optimizer.step()
            run.scheduler.step()
    except torch.OutOfMemoryError:
        raise out_of_memory(state.step + 1, "update", placement, cfg, packed=passes.packing) from None
    waited = waited_on_others(run.engine)  # the update's wait on other tenants' work: not this step's
    t0, t1 = t0 + waited, t1 + waited
    state.step += 1
    state.cursor = ready.cursor  # the trained batch's position: batches sampled ahead are not saved
    run.source.advance(run.model, state.step)
    return step_metrics(
        cfg,
        step=state.step,
        total=run.total,
        batch=batch,
        rows=run.inputs.rows,
        sums=sums,
        grad_norm=grad_norm,
        lr=float(run.scheduler.get_last_lr()[0]),
        times=(t0, t1, time.perf_counter()),
        dropped=ready.dropped,
        decode=lambda ids: run.tokenizer.decode(ids, skip_special_tokens=False),
    )


def waited_on_others(engine: object) -> float:
    """The seconds a pool's tenant waited on other tenants' work since the last call (grpo_core.joint: a step's
    timing is what usage metering bills a shared job), 0 for an engine of the run's own."""
    take = getattr(engine, "take_waited", None)
    return float(take()) if take is not None else 0.0


def _save(run: Run) -> Path:
    """Checkpoint the run's state to ``work_dir/step-N``: every rank's RNG state gathered, rank 0 writes (the weights
    and optimizer state are the same on every rank). Every rank calls it; the others get the path rank 0 wrote."""
    state, world = run.state, run.world
    rngs = all_gather_objects(world, rng_state())
    path = run.inputs.work_dir / f"step-{state.step:06d}"
    if world.is_main:
        save_checkpoint(run.model, run.optimizer, state, path, run.scheduler, rng_states=rngs)
    return path


def _memory(placement: Placement, world: World) -> MemoryStats:
    """The step's peak memory: the highest of the ranks' (rank 0's device named)."""
    peak = distributed.reduce_sums(world, {"peak_max": peak_memory_gb(placement.device)}, placement.device)
    return MemoryStats(
        device=str(placement.device),
        peak_allocated_gb=round(peak["peak_max"], 3),
        device_total_gb=placement.total_gb,
    )


def _validate(run: Run, valid_rows: list[dict[str, Any]], metrics: StepMetrics) -> bool:
    """Score the validation rows into ``metrics``; True when this is the best validation reward so far. Each rank
    scores its share of the rows and the sums are gathered, so every rank takes the same decision."""
    cfg, state, world = run.cfg, run.state, run.world
    t = time.perf_counter()
    lo, hi = world.shard(len(valid_rows))
    k = cfg.eval_samples
    mine = (0.0, 0.0, 0, 0.0)
    if lo < hi:
        mine = reward_sums(
            run.model,
            run.tokenizer,
            valid_rows[lo:hi],
            run.inputs.graders,
            samples_per_prompt=k,
            temperature=cfg.eval_temperature,
            max_new_tokens=cfg.max_completion_tokens,
            prompts_per_batch=max(1, cfg.batch_size * cfg.group_size // k),
            seed=run.inputs.seed + state.step,
            weights=cfg.reward_weights,
            engine=run.engine,
            first_row=lo,
            chat_template_kwargs=cfg.chat_template_kwargs,
            agent=run.agent,
        )
    parts = all_gather_objects(world, mine)
    n, total = sum(p[2] for p in parts), sum(p[0] for p in parts)
    reward, best_of_k = total / max(n, 1), sum(p[1] for p in parts) / max(n // k, 1)
    metrics.scores.valid_reward_mean = reward
    metrics.scores.valid_pass_at_k = best_of_k
    metrics.scores.valid_reward_stderr = standard_error(total, sum(p[3] for p in parts), n // k, k)
    metrics.timing.step.eval = round(time.perf_counter() - t - waited_on_others(run.engine), 3)
    if state.best_valid_reward is not None and reward <= state.best_valid_reward:
        return False
    state.best_valid_reward, state.best_step = reward, state.step
    return True
