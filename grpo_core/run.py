"""A GRPO run, built: everything the loop (grpo_core.trainer) runs on, set up once before its first step.

``build_run`` does it in the order each thing's inputs first exist:

1. the policy (grpo_core.policy.load_policy: the base model with a fresh LoRA adapter) and, with an environment,
   the agent that runs it in the sandbox; the prompts, each checked against ``max_prompt_tokens``;
2. the optimizer and its schedule, and what a checkpoint restores (``resume_from``: adapter, optimizer, schedule,
   data position, RNG);
3. the execution resolved for the placement: gradient checkpointing, the rollout engine and the vLLM engine's GPU
   share (grpo_core.policy.resolve_execution), memory planned for the longest sample (a multi-turn episode's
   budget where the job has an environment);
4. the rollout engine (``_start_engine``): in this process, or beside the trainer at ``max_staleness`` > 0 (a
   sampler process of its own, or vLLM's engine process shared with the producer thread);
5. the update sized from the memory the engine leaves (``_size_update``: micro-batch rows and tokens, the same on
   every rank), the job told where it trains (``Callbacks.on_start``), and the batch source
   (grpo_core.rollout.pipeline) that feeds the loop from the data position.

The config is placed by ``train`` (device and precision) and resolved here twice, each time where its inputs first
exist (the engine needs the loaded model; the micro-batches need the started engine); the loop reads ``Run.cfg``
with every ``auto`` resolved. Everything started here is closed by the caller's ``ExitStack`` when the run ends,
however it ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import torch

from grpo_core.checkpoint import ResumeState, load_checkpoint
from grpo_core.errors import UserError
from grpo_core.evaluation.health import HealthMonitor
from grpo_core.hardware import distributed
from grpo_core.hardware.device import Placement
from grpo_core.hardware.distributed import World, any_rank, broadcast_parameters
from grpo_core.hardware.memory import auto_micro_batch, auto_micro_batch_tokens
from grpo_core.hardware.rollout_placement import DeviceSplit, RolloutPlacement, rollout_placement
from grpo_core.hardware.sharding import shard, sharded
from grpo_core.policy import load_policy, prompts_of, resolve_execution, start_engine
from grpo_core.resident import Resident
from grpo_core.rewards.base import Grader
from grpo_core.rollout.agent.episodes import AgentRollouts, make_agent
from grpo_core.rollout.batch import Rollout, eos_ids
from grpo_core.rollout.engines.base import RolloutEngine
from grpo_core.rollout.engines.shared import SharedEngine
from grpo_core.rollout.pipeline import BatchSource, batch_source
from grpo_core.sampler_process import SamplerProcess, sampler_spec
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.metrics import Execution, Level, ResolvedEngine, StepMetrics
from grpo_core.update.schedule import make_scheduler
from grpo_core.update.step import UpdatePath, unpacked_reason, update_path
from grpo_core.update.tally import UpdateSums

# policy_update's signature: (model, rollout, advantages, config, autocast, π_old, world, path) -> the step's sums
UpdateFn = Callable[[Any, Rollout, torch.Tensor, GRPOConfig, "torch.dtype | None", "torch.Tensor | None", World,
                     "UpdatePath | None"], UpdateSums]  # fmt: skip


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


class MainRank:
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


@dataclass(frozen=True)
class RunInputs:
    """What the caller hands ``train`` beside the config (see its docstring)."""

    model_dir: Path
    rows: list[dict[str, Any]]
    graders: Sequence[Grader]
    work_dir: Path
    seed: int
    resume_from: Path | None
    valid_rows: list[dict[str, Any]] | None
    base_name: str | None
    environment: EnvironmentSpec | None
    sandbox_tier: str
    split: DeviceSplit | None


@dataclass
class Run:
    """What the loop runs on, built once by ``build_run``: the config with every ``auto`` resolved, the policy and its
    optimizer, where the data stands, the rollout engine and the batches it feeds."""

    cfg: GRPOConfig
    inputs: RunInputs
    placement: Placement
    world: World
    callbacks: MainRank
    model: Any
    tokenizer: Any
    agent: AgentRollouts | None
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    scheduler: Any
    state: ResumeState
    total: int
    engine: RolloutEngine
    passes: UpdatePath
    source: BatchSource
    health: HealthMonitor
    update: UpdateFn | None = None  # a pool's tenant: its pool's (grpo_core.joint); None: policy_update


def check_layout(cfg: GRPOConfig, rows: list[dict[str, Any]], world: World, split: DeviceSplit | None) -> None:
    """Refuse, before anything is loaded, a run that its ranks and devices cannot carry out."""
    if not rows:
        raise UserError("the training file has no rows")
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


def build_run(
    cfg: GRPOConfig,
    inputs: RunInputs,
    placement: Placement,
    world: World,
    callbacks: MainRank,
    cleanup: contextlib.ExitStack,
    resident: Resident | None = None,
    sampler_of: RolloutEngine | None = None,
) -> Run:
    """Load the policy, resume its state, start the rollout engine and size the update; each thing started here is
    closed by ``cleanup`` when the run ends, however it ends. ``cfg`` is placed (device and precision); the run's
    config comes back with the rest resolved, in two steps, each where its inputs first exist: the engine and
    checkpointing once the model is loaded (grpo_core.policy.resolve_execution), the micro-batches once the engine
    holds its memory (``_size_update``). ``resident``: a tenant of a pool (grpo_core.pool): the pool's policy and
    engine (loaded and started here for its first tenant, then kept by the pool), the tenant's fresh adapter in
    its slot (grpo_core.resident). ``sampler_of``: what such a tenant samples on instead of the pool's engine itself
    (grpo_core.joint.TenantEngine: a decode together with the other tenants')."""
    if resident is None or resident.model is None:
        model, tokenizer = load_policy(inputs.model_dir, cfg, inputs.seed, base_name=inputs.base_name)
        if resident is not None:
            resident.adopt(model, tokenizer)
    else:
        model, tokenizer = resident.model, resident.tokenizer
        resident.fresh(inputs.seed)
    env = inputs.environment
    agent = None
    if env is not None:  # the engine is set below: prompts (with the tools) are checked before it starts
        agent = make_agent(env, tokenizer, eos_ids(model, tokenizer), cfg.chat_template_kwargs, inputs.sandbox_tier)
        cleanup.callback(agent.runner.close)
    prompts = prompts_of(inputs.rows, tokenizer, cfg.chat_template_kwargs, agent)
    longest = _longest_prompt(prompts, tokenizer, cfg.max_prompt_tokens)
    params = [p for p in model.parameters() if p.requires_grad]
    broadcast_parameters(world, params)  # the replicas start identical (and stay so: same gradient, same step)
    optimizer: torch.optim.Optimizer = torch.optim.AdamW(
        params, lr=cfg.effective_learning_rate, weight_decay=cfg.weight_decay
    )
    total = cfg.total_steps(len(inputs.rows))
    scheduler = make_scheduler(optimizer, cfg, total * cfg.num_iterations)
    state = ResumeState(step=0, cursor=0, world_size=world.size)
    if inputs.resume_from is not None:
        state = load_checkpoint(model, optimizer, inputs.resume_from, scheduler, rank=world.rank, world_size=world.size)
        callbacks.on_message(_resumed(state, world))
        state.world_size = world.size
    episode_tokens = env.max_total_tokens if env is not None else cfg.max_completion_tokens
    # memory is sized for the longest sample: a multi-turn episode holds up to max_total_tokens after its prompt
    sample_tokens = max(cfg.max_completion_tokens, episode_tokens)
    seat = rollout_placement(placement, inputs.split) if cfg.max_staleness else None  # the sampler beside it
    own_gpu = seat is not None and seat.own_device and placement.is_cuda
    cfg = resolve_execution(cfg, model, placement, own_gpu=own_gpu, completion_tokens=sample_tokens)
    rollout = _rollout_shape(cfg, world, tokenizer, longest, episode_tokens, inputs.valid_rows, agent)
    if resident is not None and resident.engine is not None:  # synced to this tenant when its turn comes
        engine, sampler = sampler_of or resident.engine, None
    else:
        engine, sampler, placement = _start_engine(
            cfg,
            inputs,
            placement,
            seat,
            model,
            tokenizer,
            state.step,
            rollout,
            episode_tokens=episode_tokens,
            own_gpu=own_gpu,
        )
        if resident is None:
            cleanup.callback(engine.close)
        else:
            resident.engine = engine  # the pool closes it after its last tenant
            engine = sampler_of or engine
    if agent is not None:
        agent.engine = engine
    if sharded(cfg, world):  # after the engine: the merged sampler copies the whole weights first
        shard(model, world, placement.device)
    engine.suspend()  # the micro-batches are sized from what the update will have: the engine asleep where it sleeps
    cfg, passes = _size_update(cfg, model, placement, world, sample_tokens)
    if cfg.packing and not passes.packing:
        callbacks.on_message(
            f"Padded micro-batches: packing is off for this run, {unpacked_reason(model, cfg, world)}."
        )
    callbacks.on_start(_execution(cfg, placement, world, passes, sampler))
    if state.step:
        engine.sync(model, state.step)
    source = batch_source(
        cfg,
        engine,
        prompts,
        inputs.rows,
        inputs.graders,
        seed=inputs.seed,
        world=world,
        agent=agent,
        position=state.cursor,
        version=state.step,
        total=total,
    )
    cleanup.callback(source.close)  # first: its producer thread may be inside the engine
    return Run(
        cfg, inputs, placement, world, callbacks, model, tokenizer, agent, params, optimizer, scheduler, state,
        total, engine, passes, source, HealthMonitor(cfg.health),
    )  # fmt: skip


def _longest_prompt(prompts: list[str], tokenizer: Any, limit: int) -> int:
    """Tokens of the longest prompt (the merged engine's decode buffers are sized for it); a prompt over ``limit``
    (``max_prompt_tokens``) is refused, naming its row."""
    longest = 0
    for i, p in enumerate(prompts):
        n_tok = len(tokenizer(p, add_special_tokens=False)["input_ids"])
        longest = max(longest, n_tok)
        if n_tok > limit:
            raise UserError(f"training row {i + 1}: prompt is {n_tok} tokens, over max_prompt_tokens={limit}")
    return longest


def _start_engine(
    cfg: GRPOConfig,
    inputs: RunInputs,
    placement: Placement,
    seat: RolloutPlacement | None,
    model: Any,
    tokenizer: Any,
    version: int,
    rollout: tuple[int, int],
    *,
    episode_tokens: int,
    own_gpu: bool,
) -> tuple[RolloutEngine, str | None, Placement]:
    """(the run's rollout engine, its words in the job's execution, the trainer's placement after it). In turn
    (``max_staleness`` 0, no ``seat``): the configured engine in this process (grpo_core.policy.start_engine).
    Beside the trainer (``seat``, grpo_core.rollout.pipeline): the merged engine in a process of its own
    (grpo_core.sampler_process), which on a CPU takes some of the trainer's cores, or vLLM's engine process with
    each step's adapter hot-swapped in (on a GPU of its own when ``own_gpu``). ``episode_tokens``: the most tokens a
    sample holds after its prompt."""
    autocast = placement.autocast
    if seat is not None and cfg.rollout_engine == "merged":
        spec = sampler_spec(
            cfg, inputs.model_dir, inputs.seed, inputs.base_name, autocast, episode_tokens, rollout, seat
        )
        if not placement.is_cuda:  # the sampler's cores are no longer the trainer's (restored when the run ends)
            placement = replace(placement, threads=seat.trainer_threads)
            torch.set_num_threads(seat.trainer_threads)
        return SamplerProcess(spec, model, version), spec.where(), placement
    engine_cfg = cfg.model_copy(update={"device": str(seat.device)}) if own_gpu and seat is not None else cfg
    engine = start_engine(
        engine_cfg, model, tokenizer, inputs.model_dir, inputs.seed, autocast, episode_tokens, rollout
    )
    if seat is None:
        return engine, None, placement
    own = ", a device of its own" if own_gpu else ""  # vLLM's CPU build keeps its own threads
    sampler = f"vLLM's engine process on {engine_cfg.device}{own}, each step's adapter hot-swapped in"
    return SharedEngine(engine, 0), sampler, placement  # the base weights: version 0 (a resume syncs its step)


def _size_update(
    cfg: GRPOConfig, model: Any, placement: Placement, world: World, sample_tokens: int
) -> tuple[GRPOConfig, UpdatePath]:
    """(``cfg`` with ``micro_batch_size`` and ``max_tokens_per_micro_batch`` resolved, how the update runs: packed,
    fused head). Sized for a sample of ``sample_tokens`` after its prompt, from the memory the engine leaves;
    every rank must plan the same micro-batches (grpo_core.update.step): the size that fits on the fullest
    device."""
    checkpointing = bool(cfg.gradient_checkpointing)
    micro_batch = auto_micro_batch(model, cfg, placement, checkpointing=checkpointing, completion_tokens=sample_tokens)
    micro_batch = distributed.agree_min(world, micro_batch, placement.device)
    passes = update_path(model, cfg, world)  # the same every step
    tokens = auto_micro_batch_tokens(
        model,
        cfg,
        placement,
        checkpointing=checkpointing,
        fused_head=passes.fused_head,
        micro_batch=micro_batch,
        completion_tokens=sample_tokens,
    )
    tokens = distributed.agree_min(world, tokens, placement.device)
    return cfg.model_copy(update={"micro_batch_size": micro_batch, "max_tokens_per_micro_batch": tokens}), passes


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
        capture_update=path.graphs,
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
