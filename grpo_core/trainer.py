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

The trainer never knows about HTTP, queues or object stores: progress leaves through ``Callbacks``.

Under torchrun the same loop runs on every rank (grpo_core.hardware.distributed): sampling and the update are split, the
batch and the gradient are the one-process ones, and rank 0 alone reports and writes checkpoints.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import torch

from grpo_core.checkpoint import ResumeState, load_checkpoint, rng_state, save_checkpoint
from grpo_core.errors import UserError
from grpo_core.evaluation.health import HealthMonitor
from grpo_core.evaluation.validation import reward_sums, standard_error
from grpo_core.hardware import distributed
from grpo_core.hardware.device import Placement, peak_memory_gb, reset_peak_memory, resolve_placement
from grpo_core.hardware.distributed import World, all_gather_objects, any_rank, broadcast_parameters
from grpo_core.hardware.memory import auto_micro_batch, auto_micro_batch_tokens, out_of_memory
from grpo_core.hardware.rollout_placement import DeviceSplit, rollout_placement
from grpo_core.hardware.sharding import shard, sharded
from grpo_core.metrics import step_metrics
from grpo_core.policy import load_policy, prompts_of, resolve_execution, start_engine
from grpo_core.rewards.base import Grader
from grpo_core.rollout.agent.episodes import AgentRollouts, make_agent
from grpo_core.rollout.batch import eos_ids
from grpo_core.rollout.engines.base import RolloutEngine
from grpo_core.rollout.engines.sampler_process import SamplerProcess, engine_notes, sampler_spec
from grpo_core.rollout.engines.shared import SharedEngine
from grpo_core.rollout.pipeline import batch_source
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.metrics import Execution, Level, MemoryStats, ResolvedEngine, StepMetrics
from grpo_core.update.schedule import make_scheduler
from grpo_core.update.step import UpdatePath, old_logprobs, policy_update, unpacked_reason, update_path


class Callbacks(Protocol):
    """How the loop reports; every method is called from the training thread between steps."""

    def on_message(self, message: str, level: Level = "info") -> None: ...

    def on_start(self, execution: Execution) -> None:
        """The model is loaded and the engine started: where the run trains and what ``auto`` resolved to."""
        ...

    def on_step(self, metrics: StepMetrics) -> None: ...

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        """A checkpoint of ``step`` is in ``path``; ``metrics`` are that step's, ``best`` says whether its validation
        reward is the best so far (a new best is always checkpointed)."""
        ...

    def should_stop(self) -> bool:
        """Checked before every step. When it returns True the loop checkpoints the current state (unless the
        last step was just saved) and returns, so a pause or a cancel never loses finished steps."""
        ...


class _MainRank:
    """``Callbacks`` as every rank calls them: rank 0 alone reports, and whether to stop is rank 0's answer, told
    to every rank (all ranks ask before every step, so the collective lines up)."""

    def __init__(self, inner: Callbacks, world: World, device: torch.device) -> None:
        self.inner, self.world, self.device = inner, world, device

    def on_message(self, message: str, level: Level = "info") -> None:
        if self.world.is_main:
            self.inner.on_message(message, level)

    def on_start(self, execution: Execution) -> None:
        if self.world.is_main:
            self.inner.on_start(execution)

    def on_step(self, metrics: StepMetrics) -> None:
        if self.world.is_main:
            self.inner.on_step(metrics)

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        if self.world.is_main:
            self.inner.on_checkpoint(step, path, metrics, final=final, best=best)

    def should_stop(self) -> bool:
        return any_rank(self.world, self.world.is_main and self.inner.should_stop(), self.device)


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
    if not rows:
        raise UserError("the training file has no rows")
    world = world or World.from_env()
    if cfg.batch_size < world.size:
        raise UserError(
            f"batch_size={cfg.batch_size} leaves some of the {world.size} ranks without a prompt per step: raise "
            f"batch_size to at least {world.size} or train on fewer devices"
        )
    if cfg.max_staleness and world.size > 1:
        raise UserError(
            f"max_staleness {cfg.max_staleness} runs on one training process: train on one device (resources.devices "
            "1, or resources.rollout_devices = devices - 1 for a sampler on devices of its own) or set max_staleness 0"
        )
    if split is not None and not cfg.max_staleness:
        raise UserError(
            f"resources.rollout_devices={split.rollout_devices} samples on devices of its own while the trainer "
            "updates, which needs max_staleness of at least 1: set max_staleness 1 or rollout_devices 0"
        )
    placement = placement or resolve_placement(cfg.device, cfg.precision, world)
    with distributed.process_group(world, placement.device):
        if any_rank(world, placement.precision == "fp32", placement.device) and placement.precision != "fp32":
            # one precision for all: each rank measured its CPU's bf16 speed-up itself, and one fell short
            placement = replace(placement, precision="fp32", precision_reason="another rank's CPU chose fp32")
        run = (cfg, model_dir, rows, graders, callbacks, work_dir, seed, resume_from, valid_rows, placement, world)
        with contextlib.ExitStack() as cleanup:  # what the run starts (engine, sampler, sandbox) ends with it
            cleanup.callback(torch.set_num_threads, torch.get_num_threads())  # the sampler may take some cores
            return _train(
                *run, cleanup, base_name=base_name, environment=environment, sandbox_tier=sandbox_tier, split=split
            )


def _train(
    cfg: GRPOConfig,
    model_dir: Path,
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    reporter: Callbacks,
    work_dir: Path,
    seed: int,
    resume_from: Path | None,
    valid_rows: list[dict[str, Any]] | None,
    placement: Placement,
    world: World,
    cleanup: contextlib.ExitStack,
    *,
    base_name: str | None = None,
    environment: EnvironmentSpec | None = None,
    sandbox_tier: str = "auto",
    split: DeviceSplit | None = None,
) -> TrainResult:
    """The run; each thing it starts is closed by ``cleanup`` when the run ends, however it ends."""
    callbacks = _MainRank(reporter, world, placement.device)
    cfg = cfg.model_copy(update={"device": str(placement.device), "precision": placement.precision})
    model, tokenizer = load_policy(model_dir, cfg, seed, base_name=base_name)
    agent = None
    if environment is not None:  # the engine is set below: prompts (with the tools) are checked before it starts
        agent = make_agent(environment, tokenizer, eos_ids(model, tokenizer), cfg.chat_template_kwargs, sandbox_tier)
        cleanup.callback(agent.runner.close)
    prompts_all = prompts_of(rows, tokenizer, cfg.chat_template_kwargs, agent)
    longest = 0  # prompt tokens: the merged engine's decode buffers are sized for it
    for i, p in enumerate(prompts_all):
        n_tok = len(tokenizer(p, add_special_tokens=False)["input_ids"])
        longest = max(longest, n_tok)
        if n_tok > cfg.max_prompt_tokens:
            raise UserError(
                f"training row {i + 1}: prompt is {n_tok} tokens, over max_prompt_tokens={cfg.max_prompt_tokens}"
            )
    params = [p for p in model.parameters() if p.requires_grad]
    broadcast_parameters(world, params)  # the replicas start identical (and stay so: same gradient, same step)
    optimizer: torch.optim.Optimizer = torch.optim.AdamW(
        params, lr=cfg.effective_learning_rate, weight_decay=cfg.weight_decay
    )
    total = cfg.total_steps(len(rows))
    scheduler = make_scheduler(optimizer, cfg, total * cfg.num_iterations)
    state = ResumeState(step=0, cursor=0, world_size=world.size)
    if resume_from is not None:
        state = load_checkpoint(model, optimizer, resume_from, scheduler, rank=world.rank, world_size=world.size)
        callbacks.on_message(_resumed(state, world))
        state.world_size = world.size
    autocast = placement.autocast
    episode_tokens = environment.max_total_tokens if environment is not None else cfg.max_completion_tokens
    # memory is sized for the longest sample: a multi-turn episode holds up to max_total_tokens after its prompt
    sizing = cfg.model_copy(update={"max_completion_tokens": max(cfg.max_completion_tokens, episode_tokens)})
    seat = rollout_placement(placement, split) if cfg.max_staleness else None  # where the sampler runs beside it
    own_gpu = seat is not None and seat.own_device and placement.is_cuda
    sizing = resolve_execution(sizing, model, placement, own_gpu=own_gpu)
    cfg = sizing.model_copy(update={"max_completion_tokens": cfg.max_completion_tokens})
    rollout = _rollout_shape(cfg, world, tokenizer, longest, episode_tokens, valid_rows, agent)
    sampler: str | None = None  # its words in the job's execution (max_staleness > 0)
    if seat is not None and cfg.rollout_engine == "merged":  # in a process of its own (grpo_core.rollout.pipeline)
        spec = sampler_spec(cfg, model_dir, seed, base_name, autocast, episode_tokens, rollout, seat)
        if not placement.is_cuda:  # the sampler's cores are no longer the trainer's (restored when the run ends)
            placement = replace(placement, threads=seat.trainer_threads)
            torch.set_num_threads(seat.trainer_threads)
        engine: RolloutEngine = SamplerProcess(spec, model, state.step)
        sampler = spec.where()
    else:
        engine_cfg = cfg.model_copy(update={"device": str(seat.device)}) if own_gpu and seat is not None else cfg
        engine = start_engine(engine_cfg, model, tokenizer, model_dir, seed, autocast, episode_tokens, rollout)
        if seat is not None:  # vLLM: its engine process samples; each step's adapter is hot-swapped in
            engine = SharedEngine(engine, 0)  # the base weights: version 0 (a resume syncs its step below)
            own = ", a device of its own" if own_gpu else ""  # vLLM's CPU build keeps its own threads
            sampler = f"vLLM's engine process on {engine_cfg.device}{own}, each step's adapter hot-swapped in"
    cleanup.callback(engine.close)
    if agent is not None:
        agent.engine = engine
    if sharded(cfg, world):  # after the engine: the merged sampler copies the whole weights first
        shard(model, world, placement.device)
    engine.suspend()  # the micro-batches are sized from what the update will have: the engine asleep where it sleeps
    micro_batch = auto_micro_batch(model, sizing, placement, checkpointing=bool(cfg.gradient_checkpointing))
    # every rank must plan the same micro-batches (grpo_core.update.step): the size that fits on the fullest device
    micro_batch = distributed.agree_min(world, micro_batch, placement.device)
    passes = update_path(model, cfg, world)  # how the update runs (packed, fused head), the same every step
    tokens = auto_micro_batch_tokens(
        model,
        sizing.model_copy(update={"micro_batch_size": micro_batch}),
        placement,
        checkpointing=bool(cfg.gradient_checkpointing),
        fused_head=passes.fused_head,
    )
    tokens = distributed.agree_min(world, tokens, placement.device)
    cfg = cfg.model_copy(update={"micro_batch_size": micro_batch, "max_tokens_per_micro_batch": tokens})
    if cfg.packing and not passes.packing:
        callbacks.on_message(
            f"Padded micro-batches: packing is off for this run, {unpacked_reason(model, cfg, world)}."
        )
    callbacks.on_start(_execution(cfg, placement, world, passes, sampler))
    if state.step:
        engine.sync(model, state.step)
    health = HealthMonitor(cfg.health)
    source = batch_source(
        cfg,
        engine,
        prompts_all,
        rows,
        graders,
        seed=seed,
        world=world,
        agent=agent,
        position=state.cursor,
        version=state.step,
        total=total,
    )
    cleanup.callback(source.close)  # first: its producer thread may be inside the engine
    last: StepMetrics | None = None
    final_ckpt: Path | None = None
    saved_step = state.step  # the newest step whose state is in a checkpoint
    while state.step < total:
        if callbacks.should_stop():
            if last is not None and state.step > saved_step:  # keep every finished step: resume from here
                final_ckpt = _save(model, optimizer, state, work_dir, scheduler, world)
                callbacks.on_checkpoint(state.step, final_ckpt, last, final=False, best=False)
            return TrainResult(state.step, total, True, final_ckpt, last)
        t0 = time.perf_counter()
        reset_peak_memory(placement.device)
        try:
            ready = source.next(state.step + 1)
        except torch.OutOfMemoryError:
            raise out_of_memory(state.step + 1, "sampling", placement, cfg) from None  # frees the frames
        t1 = time.perf_counter()
        batch = ready.batch
        engine.suspend()  # what sampling holds on the device goes to the update (vLLM's sleep mode)
        ro = batch.ro
        # DAPO's overlong filtering: a truncated completion keeps its place in the group but gets no loss.
        if cfg.mask_truncated_completions:
            ro = replace(ro, completion_mask=ro.completion_mask * (~ro.truncated).unsqueeze(1))
        # π_old: the sampling policy. With μ = 1 it equals π_θ at update time (logp.detach(), no extra pass).
        try:
            old = old_logprobs(model, ro, batch.adv, cfg, autocast, world, passes) if cfg.num_iterations > 1 else None
            for _ in range(cfg.num_iterations):
                optimizer.zero_grad(set_to_none=True)
                sums = policy_update(model, ro, batch.adv, cfg, autocast, old, world, passes)
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
                if not math.isfinite(grad_norm):
                    raise RuntimeError(f"non-finite gradient norm at step {state.step + 1}; lower learning_rate")
                optimizer.step()
                scheduler.step()
        except torch.OutOfMemoryError:
            raise out_of_memory(state.step + 1, "update", placement, cfg, packed=passes.packing) from None
        state.step += 1
        state.cursor = ready.cursor  # the trained batch's position: batches sampled ahead are not saved
        source.advance(model, state.step)
        t2 = time.perf_counter()
        last = step_metrics(
            cfg,
            step=state.step,
            total=total,
            batch=batch,
            rows=rows,
            sums=sums,
            grad_norm=grad_norm,
            lr=float(scheduler.get_last_lr()[0]),
            times=(t0, t1, t2),
            dropped=ready.dropped,
            decode=lambda ids: tokenizer.decode(ids, skip_special_tokens=False),
        )
        best = False
        if valid_rows and (state.step == total or (cfg.eval_interval and state.step % cfg.eval_interval == 0)):
            best = _validate(cfg, model, tokenizer, engine, valid_rows, graders, seed, state, last, world, agent)
        last.memory = _memory(placement, world)  # the step's peak: sampling, update, sync and validation
        last.warnings = health.check(last)
        callbacks.on_step(last)
        for note in engine_notes(engine):  # a sampler process that died and was started again
            callbacks.on_message(note, "warn")
        for warning in last.warnings:
            callbacks.on_message(warning, "warn")
        is_last = state.step == total
        if is_last or best or (cfg.checkpoint_interval and state.step % cfg.checkpoint_interval == 0):
            path = _save(model, optimizer, state, work_dir, scheduler, world)
            callbacks.on_checkpoint(state.step, path, last, final=is_last, best=best)
            final_ckpt, saved_step = path, state.step
    return TrainResult(state.step, total, False, final_ckpt, last)


_RESOLVED_ENGINES: dict[str, ResolvedEngine] = {"merged": "merged", "transformers": "transformers", "vllm": "vllm"}


def _resumed(state: ResumeState, world: World) -> str:
    """The event of a resume; one with another world size than the checkpoint's says what carries over."""
    if state.world_size == world.size:
        return f"Resumed from step {state.step}"
    return (
        f"Resumed from step {state.step} on {world.size} rank(s) from a checkpoint saved by {state.world_size}: the "
        "adapter, optimizer, schedule and data position carry over exactly; every rank continues from rank 0's RNG "
        "state (sampling noise is keyed by step and row, so the samples do not depend on it)"
    )


def _save(
    model: Any, optimizer: torch.optim.Optimizer, state: ResumeState, work_dir: Path, scheduler: Any, world: World
) -> Path:
    """Checkpoint ``state`` to ``work_dir/step-N``: every rank's RNG state gathered, rank 0 writes (the weights and
    optimizer state are the same on every rank). Every rank calls it; the others get the path rank 0 wrote."""
    rngs = all_gather_objects(world, rng_state())
    path = work_dir / f"step-{state.step:06d}"
    if world.is_main:
        save_checkpoint(model, optimizer, state, path, scheduler, rng_states=rngs)
    return path


def _rollout_shape(
    cfg: GRPOConfig,
    world: World,
    tokenizer: Any,
    longest: int,
    episode_tokens: int,
    valid_rows: list[dict[str, Any]] | None,
    agent: AgentRollouts | None,
) -> tuple[int, int]:
    """(rows, positions) of the largest rollout this rank samples: its share of a step's prompts × G, or a batch
    of its share of the validation rows × eval_samples (``_validate``), each prompt plus its completion budget; the
    merged engine holds its decode buffers (and on a GPU captures its graph) at this size for the whole job."""
    lo, hi = world.shard(cfg.batch_size)  # this rank's prompts of a step (grpo_core.rollout.sampling)
    rows = (hi - lo) * (cfg.gfpo_sample_size or cfg.group_size)
    if valid_rows:
        lo, hi = world.shard(len(valid_rows))
        per_batch = max(1, cfg.batch_size * cfg.group_size // cfg.eval_samples)  # as _validate batches them
        rows = max(rows, min(per_batch, hi - lo) * cfg.eval_samples)
        prompts = prompts_of(valid_rows, tokenizer, cfg.chat_template_kwargs, agent)
        longest = max([longest, *(len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts)])
    return max(rows, 1), longest + episode_tokens


def _execution(cfg: GRPOConfig, placement: Placement, world: World, path: UpdatePath, sampler: str | None) -> Execution:
    return Execution(
        device=str(placement.device),
        device_name=placement.device_name,
        precision=placement.precision,
        precision_reason=placement.precision_reason,
        threads=None if placement.is_cuda else placement.threads,
        micro_batch_size=cfg.micro_batch,
        packing=path.packing,
        max_tokens_per_micro_batch=cfg.micro_batch_tokens if path.packing else None,
        fused_lm_head=path.fused_head,
        gradient_checkpointing=bool(cfg.gradient_checkpointing),
        rollout_engine=_RESOLVED_ENGINES[cfg.rollout_engine],
        vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
        vllm_sleep_mode=cfg.vllm_sleep_mode,  # resolve_execution: set for a vLLM engine on a GPU alone
        device_total_gb=placement.total_gb,
        world_size=world.size,
        ranks_per_node=world.local_size,
        backend=("nccl" if placement.is_cuda else "gloo") if world.distributed else None,
        sharding=cfg.sharding if world.distributed else None,
        max_staleness=cfg.max_staleness,
        sampler=sampler,
    )


def _memory(placement: Placement, world: World) -> MemoryStats:
    """The step's peak memory: the highest of the ranks' (rank 0's device named)."""
    peak = distributed.reduce_sums(world, {"peak_max": peak_memory_gb(placement.device)}, placement.device)
    return MemoryStats(
        device=str(placement.device),
        peak_allocated_gb=round(peak["peak_max"], 3),
        device_total_gb=placement.total_gb,
    )


def _validate(
    cfg: GRPOConfig,
    model: Any,
    tokenizer: Any,
    engine: Any,
    valid_rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    seed: int,
    state: ResumeState,
    metrics: StepMetrics,
    world: World,
    agent: AgentRollouts | None = None,
) -> bool:
    """Score the validation rows into ``metrics``; True when this is the best validation reward so far. Each rank
    scores its share of the rows and the sums are gathered, so every rank takes the same decision."""
    t = time.perf_counter()
    lo, hi = world.shard(len(valid_rows))
    k = cfg.eval_samples
    mine = (0.0, 0.0, 0, 0.0)
    if lo < hi:
        mine = reward_sums(
            model,
            tokenizer,
            valid_rows[lo:hi],
            graders,
            samples_per_prompt=k,
            temperature=cfg.eval_temperature,
            max_new_tokens=cfg.max_completion_tokens,
            prompts_per_batch=max(1, cfg.batch_size * cfg.group_size // k),
            seed=seed + state.step,
            weights=cfg.reward_weights,
            engine=engine,
            first_row=lo,
            chat_template_kwargs=cfg.chat_template_kwargs,
            agent=agent,
        )
    parts = all_gather_objects(world, mine)
    n, total = sum(p[2] for p in parts), sum(p[0] for p in parts)
    reward, best_of_k = total / max(n, 1), sum(p[1] for p in parts) / max(n // k, 1)
    metrics.scores.valid_reward_mean = reward
    metrics.scores.valid_pass_at_k = best_of_k
    metrics.scores.valid_reward_stderr = standard_error(total, sum(p[3] for p in parts), n // k, k)
    metrics.timing.step.eval = round(time.perf_counter() - t, 3)
    if state.best_valid_reward is not None and reward <= state.best_valid_reward:
        return False
    state.best_valid_reward, state.best_step = reward, state.step
    return True
