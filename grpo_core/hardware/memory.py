"""Memory levers: gradient checkpointing, ``micro_batch_size`` and ``max_tokens_per_micro_batch: auto``, the
vLLM engine's share of a GPU, and the out-of-memory failure a user can act on.

Sizing is an estimate from the model's config, not a trial allocation: a trial would have to run the worst-case
micro-batch (longest prompt + longest completion) and still could not see the next step's lengths. The estimate
is deliberately high (every sequence at ``max_prompt_tokens + max_completion_tokens``, the logits in fp32 three
times over), and only ``SAFETY`` of the free memory is planned for, so ``auto`` should never be what runs out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grpo_core.errors import DeviceOutOfMemory
from grpo_core.hardware.device import Placement, device_memory_gb, peak_memory_gb
from grpo_core.schemas.config import GRPOConfig

SAFETY = 0.7  # share of the free memory the micro-batch estimate may plan for
CPU_MICRO_BATCH = 8  # on a CPU memory is rarely the limit and bigger micro-batches do not run faster
MAX_AUTO_MICRO_BATCH = 64
MAX_AUTO_TOKENS = 65_536  # a packed micro-batch's auto budget: past this, more tokens per pass buy no speed
# gradient_checkpointing auto: off when the update without it holds this many rows (or the step's, when fewer)
CHECKPOINT_FREE_ROWS = 8
VLLM_MAX_SHARE = 0.5  # the colocated vLLM engine never takes more than this share of the GPU by default
# With sleep mode the engine and the update take turns, so the engine may take most of what is free once the model
# is loaded; what stays set aside is the trainer's memory while the engine is awake (the adapter, its gradients and
# optimizer state, the CUDA context's growth, the rollout's tensors) and the allocator's fragmentation.
VLLM_MAX_SHARE_SLEEPING = 0.8
VLLM_SLEEP_RESERVE_GB = 3.0
# On a GPU of its own (resources.rollout_devices) nothing else needs the device: vLLM's own default share.
OWN_GPU_SHARE = 0.9
# The fused LM head's share of the update (grpo_core.update.fused_head): its rows go through the head in chunks of at
# most HEAD_BUDGET_BYTES of work, each logit costing HEAD_BYTES_PER_LOGIT while its chunk is live (the logits and
# their gradient in bf16, the log-softmax's fp32 row and its exponentials). A bigger chunk is fewer launches (each
# chunk is ~40 ops per pass: 152 chunks at 2 × 8 × 256 tokens and a 152k vocabulary with 16 MiB chunks, a quarter
# of the update's launches); the budget is set aside in the token plan (``auto_micro_batch_tokens``).
HEAD_BUDGET_BYTES = 2**30
HEAD_BYTES_PER_LOGIT = 16
# A pool's tenants (``pool_room``): each more holds its adapter's values, gradient and AdamW's two moments, and the
# copy of its values parked while another holds the slot (grpo_core.resident), all fp32; the plan fills at most
# POOL_MARGIN of the device and holds at most POOL_CAP tenants.
TENANT_STATE_BYTES = 5 * 4
POOL_MARGIN = 0.9
POOL_CAP = 8


def _dims(model: Any) -> tuple[int, int, int, int]:
    """(layers, hidden, intermediate, vocab) from a transformers config."""
    c = model.config
    hidden = int(c.hidden_size)
    return int(c.num_hidden_layers), hidden, int(getattr(c, "intermediate_size", 4 * hidden)), int(c.vocab_size)


def _completion(cfg: GRPOConfig, completion_tokens: int | None) -> int:
    """The tokens after a prompt a plan is made for: ``completion_tokens`` when given (a multi-turn job's episode
    budget), else ``max_completion_tokens``."""
    return cfg.max_completion_tokens if completion_tokens is None else completion_tokens


def token_bytes(model: Any, *, checkpointing: bool, precision_bytes: int) -> int:
    """Estimated activation memory of one token in the update, the logits aside (``sequence_bytes``)."""
    layers, h, inter, _ = _dims(model)
    per_layer = 12 * h + 4 * inter
    return (layers * h + per_layer if checkpointing else layers * per_layer) * precision_bytes


def sequence_bytes(
    model: Any, cfg: GRPOConfig, *, checkpointing: bool, precision_bytes: int, completion_tokens: int | None = None
) -> int:
    """Estimated activation memory of one sequence in the update (forward kept for backward, plus the logits): a
    prompt of ``max_prompt_tokens`` and ``completion_tokens`` after it (default ``max_completion_tokens``; a
    multi-turn job plans for its episode's budget).

    Per decoder layer and token a LLaMA-style block keeps about 12·h + 4·i values for its backward (norm inputs,
    q/k/v/o and MLP inputs, the gate/up outputs and the activation, the residuals; Korthikanti et al., 2022, with
    no s² attention term under SDPA). With checkpointing only each layer's input (h values) is kept, plus one
    layer's full set while it is recomputed. The head's (C, V) logits are fp32 (log-softmax and its gradient).
    """
    vocab = _dims(model)[3]
    completion = _completion(cfg, completion_tokens)
    per_token = token_bytes(model, checkpointing=checkpointing, precision_bytes=precision_bytes)
    return (cfg.max_prompt_tokens + completion) * per_token + completion * vocab * 4 * 3


def _precision_bytes(placement: Placement) -> int:
    return 2 if placement.autocast else 4


def planned_sequence_bytes(
    model: Any, cfg: GRPOConfig, placement: Placement, *, checkpointing: bool, completion_tokens: int | None = None
) -> int:
    """``sequence_bytes`` in the precision ``placement`` trains in: what every plan here divides memory by."""
    precision_bytes = _precision_bytes(placement)
    return sequence_bytes(
        model, cfg, checkpointing=checkpointing, precision_bytes=precision_bytes, completion_tokens=completion_tokens
    )


def planned_token_bytes(model: Any, placement: Placement, *, checkpointing: bool) -> int:
    """``token_bytes`` in the precision ``placement`` trains in: a packed micro-batch's per-token plan (with the
    fused head, whose logits are one chunk's, ``HEAD_BUDGET_BYTES``, whatever the tokens)."""
    return token_bytes(model, checkpointing=checkpointing, precision_bytes=_precision_bytes(placement))


def sequences_fit(free_gb: float, per_sequence: int) -> int:
    """Sequences of ``per_sequence`` bytes that ``SAFETY`` of ``free_gb`` holds (before auto's caps)."""
    return int(SAFETY * free_gb * 2**30 // per_sequence)


def auto_micro_batch(
    model: Any, cfg: GRPOConfig, placement: Placement, *, checkpointing: bool, completion_tokens: int | None = None
) -> int:
    """``micro_batch_size: auto``: as many sequences as ``SAFETY`` of the GPU's free memory holds, at most the
    step's sequences; ``CPU_MICRO_BATCH`` on a CPU. Called after the rollout engine started, so a colocated vLLM
    engine's reservation is already taken. ``completion_tokens``: as ``sequence_bytes``'s."""
    if cfg.micro_batch_size != "auto":
        return cfg.micro_batch_size
    step_rows = cfg.batch_size * (cfg.gfpo_sample_size or cfg.group_size)
    mem = device_memory_gb(placement.device)
    if mem is None:
        return min(CPU_MICRO_BATCH, step_rows)
    free_gb, _ = mem
    per_seq = planned_sequence_bytes(
        model, cfg, placement, checkpointing=checkpointing, completion_tokens=completion_tokens
    )
    fit = sequences_fit(free_gb, per_seq)
    if fit < 1:
        completion = _completion(cfg, completion_tokens)
        raise DeviceOutOfMemory(
            f"one sequence of {cfg.max_prompt_tokens + completion} tokens needs about "
            f"{per_seq / 2**30:.1f} GiB for the update and {placement.device} has {free_gb:.1f} GiB free: lower "
            "max_completion_tokens or max_prompt_tokens"
            + ("" if checkpointing else ", or set gradient_checkpointing: true")
        )
    return max(1, min(fit, step_rows, MAX_AUTO_MICRO_BATCH))


def auto_micro_batch_tokens(
    model: Any,
    cfg: GRPOConfig,
    placement: Placement,
    *,
    checkpointing: bool,
    fused_head: bool,
    micro_batch: int | None = None,
    completion_tokens: int | None = None,
) -> int:
    """``max_tokens_per_micro_batch: auto``: ``micro_batch`` sequences (default ``cfg.micro_batch``, resolved) at
    their longest (``completion_tokens`` as ``sequence_bytes``'s), the memory the padded plan is sized for. On a
    GPU with the fused head the logits no longer grow with the tokens (one chunk's, grpo_core.update.fused_head),
    so the budget is what ``SAFETY`` of the free memory holds of activations, less the head's bounded logits and
    their gradient, at most ``MAX_AUTO_TOKENS`` and at least one sequence at its longest."""
    if cfg.max_tokens_per_micro_batch != "auto":
        return cfg.max_tokens_per_micro_batch
    longest = cfg.max_prompt_tokens + _completion(cfg, completion_tokens)
    mem = device_memory_gb(placement.device)
    if mem is None or not fused_head:
        return (cfg.micro_batch if micro_batch is None else micro_batch) * longest
    per_token = planned_token_bytes(model, placement, checkpointing=checkpointing)
    fit = int((SAFETY * mem[0] * 2**30 - HEAD_BUDGET_BYTES) // per_token)
    return max(longest, min(fit, MAX_AUTO_TOKENS))


def vllm_memory_share(
    model: Any,
    cfg: GRPOConfig,
    placement: Placement,
    *,
    checkpointing: bool,
    sleeping: bool = False,
    completion_tokens: int | None = None,
) -> float:
    """The vLLM engine's ``gpu_memory_utilization`` when it shares the GPU with training: the configured value, or
    auto. ``sleeping`` (the engine sleeps during each update, grpo_core.rollout.engines.vllm_engine): what is free
    after the model was loaded, less ``VLLM_SLEEP_RESERVE_GB``, capped at ``VLLM_MAX_SHARE_SLEEPING``. Awake beside
    the update: what is free once the training's own need (one micro-batch of at least 4 sequences, plus 2 GiB for
    the optimizer and allocator slack) is set aside, capped at ``VLLM_MAX_SHARE``. vLLM counts the share against
    the device's total memory and refuses to start if that much is not free. ``completion_tokens``: as
    ``sequence_bytes``'s."""
    if cfg.vllm_gpu_memory_utilization is not None:
        return cfg.vllm_gpu_memory_utilization
    mem = device_memory_gb(placement.device)
    if mem is None:
        raise ValueError("vllm_memory_share is for a GPU")
    free_gb, total_gb = mem
    if sleeping:
        training_gb = VLLM_SLEEP_RESERVE_GB
        cap = VLLM_MAX_SHARE_SLEEPING
    else:
        per_seq = planned_sequence_bytes(
            model, cfg, placement, checkpointing=checkpointing, completion_tokens=completion_tokens
        )
        training_gb = 4 * per_seq / 2**30 / SAFETY + 2.0
        cap = VLLM_MAX_SHARE
    share = (free_gb - training_gb) / total_gb
    if share < 0.05:
        raise DeviceOutOfMemory(
            f"{placement.device} has {free_gb:.1f} GiB free after loading the model; training needs about "
            f"{training_gb:.1f} GiB, which leaves the vLLM engine nothing: use rollout_engine 'merged' or "
            "'transformers', or lower max_completion_tokens"
        )
    return round(min(cap, share), 3)


def checkpointing_needed(
    model: Any,
    cfg: GRPOConfig,
    placement: Placement,
    *,
    engine_share: float,
    fused_head: bool,
    completion_tokens: int | None = None,
) -> bool:
    """``gradient_checkpointing: auto``: on only where the update without it cannot hold its micro-batch. The rows
    it must hold are ``micro_batch_size``, or with ``auto`` the step's rows up to ``CHECKPOINT_FREE_ROWS``, each at
    its longest; what it may use is ``SAFETY`` of the free memory less ``engine_share`` of it (a colocated vLLM
    engine that stays awake through the update). With ``fused_head`` the logits are the head's bounded chunk
    (``HEAD_BUDGET_BYTES``, as ``auto_micro_batch_tokens`` plans), else every row's own (``sequence_bytes``).
    Recomputing every layer costs a third more update compute and another forward's launches, so a model whose
    activations fit never pays it; a CPU never checkpoints."""
    mem = device_memory_gb(placement.device)
    if mem is None:
        return False
    step_rows = cfg.batch_size * (cfg.gfpo_sample_size or cfg.group_size)
    rows = cfg.micro_batch_size if cfg.micro_batch_size != "auto" else min(step_rows, CHECKPOINT_FREE_ROWS)
    room = SAFETY * mem[0] * (1.0 - engine_share) * 2**30
    if fused_head:
        longest = cfg.max_prompt_tokens + _completion(cfg, completion_tokens)
        return rows * longest * planned_token_bytes(model, placement, checkpointing=False) + HEAD_BUDGET_BYTES > room
    per_seq = planned_sequence_bytes(model, cfg, placement, checkpointing=False, completion_tokens=completion_tokens)
    return rows * per_seq > room


@dataclass(frozen=True)
class MemoryPlan:
    """What one GPU holds for a job, by part (bytes): the frozen weights (bf16), the merged sampler's copy of the
    adapted layers and its static KV cache (``engine`` merged; a colocated vLLM engine takes its share instead and
    sleeps through the update), the update's activations for one micro-batch of ``tokens``, the fused head's
    chunk, and the adapter with its gradient and AdamW's two moments (fp32)."""

    weights: int
    sampler_weights: int
    kv_cache: int
    activations: int
    head: int
    adapter: int

    @property
    def update_peak(self) -> int:
        """While the update runs: everything but a sleeping engine's share (the merged sampler's copy stays)."""
        return self.weights + self.sampler_weights + self.activations + self.head + self.adapter

    @property
    def sampling_peak(self) -> int:
        return self.weights + self.sampler_weights + self.kv_cache + self.adapter


def memory_plan(
    model: Any,
    *,
    params: int,
    adapted_params: int,
    lora_params: int,
    rows: int,
    sequence_tokens: int,
    tokens: int,
    checkpointing: bool,
) -> MemoryPlan:
    """``model``'s (its ``config``) memory on a GPU in bf16: ``params`` in all, ``adapted_params`` of them in the
    layers the adapter wraps (the merged sampler copies those), ``lora_params`` trained; the sampler decodes ``rows``
    rows of up to ``sequence_tokens`` tokens; the update's micro-batch is ``tokens`` packed tokens."""
    return MemoryPlan(
        weights=params * 2,
        sampler_weights=adapted_params * 2,
        kv_cache=rows * sequence_tokens * kv_token_bytes(model, 2),
        activations=tokens * token_bytes(model, checkpointing=checkpointing, precision_bytes=2),
        head=HEAD_BUDGET_BYTES,
        adapter=lora_params * 4 * 4,
    )


def kv_token_bytes(model: Any, precision_bytes: int = 2) -> int:
    """The KV cache of one token, every layer's keys and values (``model``'s config)."""
    c = model.config
    heads = int(c.num_attention_heads)
    head_dim = int(getattr(c, "head_dim", None) or int(c.hidden_size) // heads)
    return int(c.num_hidden_layers) * 2 * int(getattr(c, "num_key_value_heads", heads)) * head_dim * precision_bytes


@dataclass(frozen=True)
class PoolRoom:
    """What a pool's device holds beside its first job (``pool_room``): ``room`` bytes, each more job tenant costing
    ``per_job`` and each training-API run ``per_run``; at most ``cap`` tenants in all (past a few, more tenants share
    the device's time, not its idle capacity)."""

    room: int
    per_job: int
    per_run: int
    cap: int = POOL_CAP

    def fits(self, jobs: int, runs: int) -> bool:
        """Whether ``jobs`` job tenants (the first among them) and ``runs`` training runs fit."""
        return jobs + runs <= self.cap and max(jobs - 1, 0) * self.per_job + runs * self.per_run <= self.room

    @property
    def jobs(self) -> int:
        """How many job tenants fit with no run beside them (at least 1)."""
        return max(1, min(self.cap, 1 + self.room // self.per_job))


def pool_room(
    total: int, peak: int, lora_params: int, *, adapted_bytes: int = 0, kv_per_tenant: int = 0, cap: int = POOL_CAP
) -> PoolRoom:
    """A pool's room (grpo_core.pool) on a device of ``total`` bytes: ``POOL_MARGIN`` of it less the first tenant's
    measured ``peak`` (the base weights, the engine, the adapter's state and one step's activations: tenants in turn
    hold one step's activations at a time, and a pass shared by several is packed within the smallest of their token
    budgets). Each more job costs its adapter's state (``TENANT_STATE_BYTES`` per trained parameter) and, where the
    tenants' rollouts share a decode, its rows' KV cache (``kv_per_tenant``); each training-API run its adapter's
    state and its sampler's merged copy of the adapted weights (``adapted_bytes``)."""
    state = lora_params * TENANT_STATE_BYTES
    return PoolRoom(int(total * POOL_MARGIN) - peak, max(state + kv_per_tenant, 1), max(state + adapted_bytes, 1), cap)


def enable_checkpointing(model: Any) -> None:
    """Turn on transformers' per-layer activation checkpointing (non-reentrant), to be switched on around the
    update by ``checkpointing``; the model stays in eval mode (no dropout) everywhere else."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


@contextlib.contextmanager
def checkpointing(model: Any, enabled: bool) -> Iterator[None]:
    """Activation checkpointing for the duration of an update.

    transformers checkpoints a decoder layer only when that layer's ``training`` flag is set. Setting the flag on
    the decoder layers alone (not recursively) turns checkpointing on without turning on any dropout: attention
    and MLP modules keep their own flags, so the policy stays deterministic and the μ = 1 ratio stays exactly 1.
    Checkpointed layers drop a KV cache, so the padded update's shared-prefix path is off while this is on
    (grpo_core.update.step.UpdatePath); the packed path shares a prompt without a cache, so it keeps sharing.
    """
    if not enabled:
        yield
        return
    layers = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False)]
    if not layers:
        raise RuntimeError("checkpointing(model, True) needs enable_checkpointing(model) first")
    for m in layers:
        m.training = True
    try:
        yield
    finally:
        for m in layers:
            m.training = False


def out_of_memory(
    step: int, phase: str, placement: Placement, cfg: GRPOConfig, *, packed: bool = False
) -> DeviceOutOfMemory:
    """The user's error for a ``torch.OutOfMemoryError`` in ``phase`` of ``step``: where, the peak, the remedies
    (``cfg`` is the run's resolved config; ``packed``: its update runs packed micro-batches, sized by tokens)."""
    peak = ""
    if placement.is_cuda:
        peak = f" (peak {peak_memory_gb(placement.device):.1f} GiB of {placement.total_gb:.1f} GiB)"
    if phase == "sampling":
        remedies = ["lower group_size or batch_size", "lower max_completion_tokens"]
        if cfg.rollout_engine == "vllm":
            remedies.append("lower vllm_gpu_memory_utilization")
    else:
        if packed:
            remedies = [f"lower max_tokens_per_micro_batch (it was {cfg.micro_batch_tokens})"]
        else:
            remedies = [f"lower micro_batch_size (it was {cfg.micro_batch})"]
        if not cfg.gradient_checkpointing:
            remedies.append("set gradient_checkpointing: true")
        remedies.append("lower max_completion_tokens")
    return DeviceOutOfMemory(
        f"out of memory on {placement.device} in the {phase} of step {step}{peak}: " + ", or ".join(remedies)
    )
