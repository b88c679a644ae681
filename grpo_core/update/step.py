"""The policy update for one sampled batch: micro-batched forward/backward with an exact full-batch gradient.

Kept apart from the loop (grpo_core.trainer) so the loop reads as the algorithm and this as the arithmetic. With
several ranks (grpo_core.hardware.distributed) the micro-batches are planned over the whole batch, as one process plans
them, and dealt to the ranks in a snake order; each rank backpropagates its own, and the gradients and the sums
are reduced here, so the caller sees the one-process result.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import torch
from torch import Tensor

from grpo_core.hardware.device import HOST, to_device
from grpo_core.hardware.distributed import World, all_reduce_sum_
from grpo_core.hardware.memory import checkpointing
from grpo_core.hardware.sharding import sharded
from grpo_core.models.prefix_cache import shared_prefixes
from grpo_core.rollout.batch import Rollout
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.captured import capture_by_default, capture_problem, captured_passes, static_pack
from grpo_core.update.compiled import compiled_layers
from grpo_core.update.correction import Correction, importance_weights
from grpo_core.update.logprobs import completion_logprobs, compute_dtype
from grpo_core.update.lora_fused import reference_pass
from grpo_core.update.loss import LossInputs, LossOutputs, StepSize, policy_loss
from grpo_core.update.packing import Packed, head_problem, pack, packed_attention, packing_problem, span_lengths
from grpo_core.update.tally import Tally, UpdateSums


class LogprobOptions(TypedDict):
    """``completion_logprobs``' keywords for how a pass runs."""

    share_prefix: bool
    packing: bool
    fused_head: bool
    packed: Packed | None


@dataclass(frozen=True)
class UpdatePath:
    """How the update's forward passes run; the maths is the same on every path (tests/unit/test_packing.py).

    ``packing``: padding-free micro-batches by tokens (grpo_core.update.packing); ``fused_head``: the LM head in
    chunks fused with the log-prob (grpo_core.update.fused_head); ``share_prefix``: a prompt's rows share its
    computation (packed: one segment; padded: a KV cache, which checkpointed layers cannot keep); ``compiled``: the
    decoder layers under torch.compile (grpo_core.update.compiled); ``captured``: packs padded to buckets
    (grpo_core.update.captured), their passes replayed as CUDA graphs where ``graphs``."""

    packing: bool = False
    fused_head: bool = False
    share_prefix: bool = True
    compiled: bool = False
    captured: bool = False
    graphs: bool = False

    def pack(self, args: tuple[Tensor, ...], device: torch.device, dtype: torch.dtype) -> Packed | None:
        """The micro-batch ``args`` (``micro_args``, on the host) packed there once for all its passes (reference,
        policy, π_old) and moved to ``device`` (its attention for ``dtype``); None when padded, or when it has no
        loss token (a plain padded pass then runs: its loss is 0)."""
        if not self.packing or not bool(args[3].any()):
            return None
        packed = pack(*args, share_prefix=self.share_prefix)
        return (static_pack(packed) if self.captured else packed).to(device, dtype)

    def logprob_kwargs(self, packed: Packed | None, *, grad: bool, checkpointed: bool) -> LogprobOptions:
        """``completion_logprobs``' keywords for a pass over the micro-batch ``packed`` (``pack``): a padded pass
        with gradients through checkpointed layers does not share prefixes; a micro-batch with nothing to pack runs
        plainly padded (no cache to keep through checkpointed layers)."""
        if self.packing and packed is None:
            return LogprobOptions(share_prefix=False, packing=False, fused_head=False, packed=None)
        share = self.share_prefix and (self.packing or not (grad and checkpointed))
        return LogprobOptions(share_prefix=share, packing=self.packing, fused_head=self.fused_head, packed=packed)


def update_path(model: Any, cfg: GRPOConfig, world: World) -> UpdatePath:
    """The path ``cfg`` asks for, as far as ``model`` and the layout allow. Under FSDP every pass is padded and
    unshared: the root module's hooks must run (the decoder is not called apart from the head) and every rank must
    run the same passes (grpo_core.hardware.sharding)."""
    if sharded(cfg, world):
        return UpdatePath(share_prefix=False)
    packing = cfg.packing and packing_problem(model) is None
    captured = cfg.capture_update  # resolved by grpo_core.policy.resolve_execution for a job; else auto here
    if captured is None:
        wakes = cfg.rollout_engine == "vllm" and bool(cfg.vllm_sleep_mode)
        captured = capture_by_default(model, _device(model), compile_update=cfg.compile_update, engine_wakes=wakes)
    captured = packing and captured
    return UpdatePath(
        packing=packing,
        fused_head=cfg.fused_lm_head and head_problem(model) is None,
        compiled=cfg.compile_update,
        captured=captured,
        graphs=captured and capture_problem(model, _device(model)) is None,
    )


def unpacked_reason(model: Any, cfg: GRPOConfig, world: World) -> str:
    """Why ``update_path`` runs padded micro-batches although ``cfg.packing`` asks for packed ones."""
    if sharded(cfg, world):
        return "FSDP sharding runs every pass padded"
    return packing_problem(model) or "no reason"


def attention_kernels(device: str, packed: bool = False) -> Any:
    """On CPU, SDPA's math kernels for the padded update's passes: PyTorch's CPU flash-attention backward is the
    slower one at a padded micro-batch's shapes (bench.update_ab: docs/benchmarks.md, "What each optimization
    buys"). Elsewhere the default choice; the packed path's one call per layer picks its CPU kernel by the length
    of its attention rows (grpo_core.update.attention.CPU_FLASH_MIN_QUERIES)."""
    if device != "cpu" or packed:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


def _device(model: Any) -> torch.device:
    """The model's device: the rollout moves there, and every tensor of the update is created there."""
    device: torch.device = next(model.parameters()).device
    return device


def micro_args(ro: Rollout, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Rows ``idx`` of the rollout with all-padding columns dropped: (prompt ids, prompt mask, ids, mask)."""
    cmask = ro.completion_mask[idx]
    # drop the columns after the last loss token of every row (a multi-turn row's mask has holes: tool tokens)
    used = torch.nonzero(cmask.any(dim=0)).flatten()
    c_len = int(used[-1]) + 1 if used.numel() else 1
    pmask = ro.prompt_mask[idx]
    p_start = int((pmask.sum(dim=0) == 0).sum())  # drop all-padding head columns (left padding)
    return ro.prompt_ids[idx, p_start:], pmask[:, p_start:], ro.completion_ids[idx, :c_len], cmask[:, :c_len]


def _packed_batches(ro: Rollout, active: torch.Tensor, budget: int, share: bool) -> list[torch.Tensor]:
    """``active`` rows in micro-batches of at most ``budget`` packed tokens (a row's completion up to its last loss
    token, its prompt once per micro-batch when rows share it), each filled up to an even share of the tokens
    (rows do not split, so one more micro-batch can come out). Rows are taken by prompt, then by length, so a
    prompt's rows meet in as few micro-batches as possible; a row longer than the budget runs alone.

    The plan does not depend on the world size: two ranks compute exactly the micro-batches one process computes,
    so the adapter they train is one process's to the last bit of rounding (tests/distributed). The price: when
    the count is not a multiple of the ranks, a rank runs one micro-batch more than another."""
    spans = span_lengths(ro.completion_mask).to(HOST)
    prompts = ro.prompt_mask.sum(dim=1).to(HOST)
    groups = shared_prefixes(ro.prompt_ids, ro.prompt_mask) if share else None
    group = groups[1].to(HOST) if groups is not None else torch.arange(len(spans), device=HOST)
    order = active.to(HOST)
    order = order[torch.argsort(spans[order], stable=True)]
    rows: list[int] = order[torch.argsort(group[order], stable=True)].tolist()
    span, prompt, grp = spans.tolist(), prompts.tolist(), group.tolist()
    total = sum(span[r] for r in rows) + sum(prompt[r] for r in {grp[r]: r for r in rows}.values())
    target = -(-total // max(1, -(-total // budget)))  # an even share over the fewest micro-batches that fit
    batches: list[list[int]] = []
    current: list[int] = []
    tokens, seen = 0, set[int]()
    for r in rows:
        cost = span[r] + (0 if grp[r] in seen else prompt[r])
        if current and tokens + cost > target:
            batches.append(current)
            current, tokens, seen = [], 0, set[int]()
            cost = span[r] + prompt[r]
        current.append(r)
        tokens += cost
        seen.add(grp[r])
    if current:
        batches.append(current)
    return [torch.tensor(b, dtype=torch.long, device=active.device) for b in batches]


def plan_micro_batches(
    ro: Rollout, adv: torch.Tensor, cfg: GRPOConfig, world: World, path: UpdatePath = UpdatePath()
) -> tuple[list[torch.Tensor], StepSize]:
    """This rank's micro-batches (row indices on ``adv``'s device) and the step's global counts.

    The plan is made over the whole batch, identically on every rank: with β = 0 a sequence whose advantage is 0
    (its group's rewards were all equal, or it was unscorable) adds exactly 0 to the loss and its gradient, so it
    is left out, and so is a row with no loss tokens. Packed (``path.packing``), the rest fills micro-batches of
    ``cfg.micro_batch_tokens`` tokens (``_packed_batches``); padded, it is sorted by completion length, so little
    compute goes to padding, in micro-batches of ``micro_batch_size`` rows. ``bnpo`` and the top-entropy mask
    depend on a micro-batch's composition: there every row stays, in sampling order, in micro-batches of
    ``micro_batch_size`` (TRL's order), packed or not. The micro-batches are dealt by ``World.owns`` (a snake
    order); padded, where composition does not matter, their count is a multiple of the ranks and their sizes as
    even as the rows allow, so every rank gets the same share of the work.
    """
    device = adv.device
    n = ro.completion_ids.shape[0]
    lengths = ro.completion_mask.sum(dim=1).to(device)
    size = cfg.micro_batch
    if cfg.loss_aggregation == "bnpo" or cfg.top_entropy_quantile < 1.0:
        active = torch.arange(n, device=device)
        batches = [active[lo : lo + size] for lo in range(0, n, size)]
    else:
        only_pg = cfg.beta == 0 and cfg.entropy_coef == 0
        keep = (lengths > 0) & (adv != 0) if only_pg else (lengths > 0)
        active = torch.nonzero(keep).flatten()
        if path.packing:
            batches = _packed_batches(ro, active, cfg.micro_batch_tokens, path.share_prefix)
        else:
            active = active[torch.argsort(lengths[active], stable=True)]
            # equal micro-batches, as many as a multiple of the ranks (each rank the same count), none over the size
            count = world.size * max(1, -(-len(active) // (world.size * size)))
            size = max(1, -(-len(active) // count))
            batches = [active[lo : lo + size] for lo in range(0, len(active), size)]
    step = StepSize(
        n_sequences=n,
        n_tokens=float(lengths.sum()),
        max_completion_tokens=cfg.max_completion_tokens,
        n_micro_batches=max(1, len(batches)),
    )
    return [b for k, b in enumerate(batches) if world.owns(k)], step


def scheduled_micro_batches(
    ro: Rollout, adv: torch.Tensor, cfg: GRPOConfig, world: World, *, matched: bool, path: UpdatePath = UpdatePath()
) -> tuple[list[tuple[torch.Tensor, bool]], StepSize]:
    """This rank's micro-batches, each with whether it counts, and the step's counts. ``matched`` (FSDP,
    grpo_core.hardware.sharding): every rank must run as many forward/backward passes as the busiest, so a rank
    with fewer micro-batches repeats one row (the longest) that does not count: its pass runs, its loss is
    multiplied by 0."""
    mine, step = plan_micro_batches(ro, adv, cfg, world, path)
    scheduled = [(idx, True) for idx in mine]
    if matched and world.distributed:
        counts = [len(plan_micro_batches(ro, adv, cfg, replace(world, rank=r), path)[0]) for r in range(world.size)]
        filler = torch.argmax(ro.completion_mask.sum(dim=1)).view(1).to(adv.device)
        scheduled += [(filler, False)] * (max(counts) - len(mine))
    return scheduled, step


@dataclass(frozen=True)
class MicroBatch:
    """One micro-batch's rows on the model's device: its padded tensors (``micro_args``), its pack (None when the
    path is padded or nothing in it carries loss), and what the loss reads of the rollout. Planned and packed on
    the host, moved with copies the host does not wait for (grpo_core.hardware.device.to_device)."""

    args: tuple[Tensor, ...]  # (prompt ids, prompt mask, completion ids, completion mask), all-padding columns cut
    packed: Packed | None
    idx: Tensor  # the rows, on the device
    adv: Tensor  # (b,)
    sampling_logp: Tensor | None  # (b, c): the engine's log-probs (vLLM, merged), for the importance correction


def micro_batch(
    ro: Rollout,
    adv: Tensor,
    idx: Tensor,
    path: UpdatePath,
    device: torch.device,
    dtype: torch.dtype,
    args: tuple[Tensor, ...] | None = None,
) -> MicroBatch:
    """Rows ``idx`` of the host rollout ``ro`` as a ``MicroBatch`` on ``device``; ``args``: their ``micro_args``,
    when the caller has them already."""
    args = micro_args(ro, idx) if args is None else args
    sampling = None if ro.sampling_logp is None else ro.sampling_logp[idx, : args[2].shape[1]]
    return MicroBatch(
        args=tuple(to_device(t, device) for t in args),
        packed=path.pack(args, device, dtype),
        idx=to_device(idx, device),
        adv=to_device(adv[idx], device),
        sampling_logp=None if sampling is None else to_device(sampling, device),
    )


def _autocast(device: torch.device, dtype: torch.dtype | None, path: UpdatePath) -> Any:
    """Autocast to ``dtype`` on ``device``, or nothing (a device without autocast, such as ``meta``, takes none).
    Replaying graphs, without autocast's cache of cast weights: a graph would replay the cast it captured."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype, cache_enabled=not path.graphs)


@torch.no_grad()
def old_logprobs(
    model: Any,
    ro: Rollout,
    adv: Tensor,
    cfg: GRPOConfig,
    autocast: torch.dtype | None,
    world: World,
    path: UpdatePath | None = None,
) -> Tensor:
    """(B, C) log-probs under the policy that sampled (before any update of this step), on the model's device, for
    the rows of this rank's micro-batches (``plan_micro_batches``, on ``path``: ``update_path`` by default, as
    ``policy_update``); 0 past each mask and on the other ranks' rows, which it never reads."""
    device = _device(model)
    path = path or update_path(model, cfg, world)
    ro, adv = ro.to(HOST), adv.to(HOST)
    n, c = ro.completion_ids.shape
    old = torch.zeros(n, c, device=device)
    fsdp = sharded(cfg, world)
    for idx, counts in scheduled_micro_batches(ro, adv, cfg, world, matched=fsdp, path=path)[0]:
        mb = micro_batch(ro, adv, idx, path, device, compute_dtype(model, autocast))
        options = path.logprob_kwargs(mb.packed, grad=False, checkpointed=False)
        with (
            _autocast(device, autocast, path),
            compiled_layers(model, path.compiled),
            captured_passes(model, path.graphs),
        ):
            logp = completion_logprobs(model, *mb.args, temperature=cfg.temperature, **options)
        if counts:
            old[mb.idx, : mb.args[2].shape[1]] = logp
    return old


def _loss(
    model: Any,
    mb: MicroBatch,
    cfg: GRPOConfig,
    autocast: torch.dtype | None,
    path: UpdatePath,
    step: StepSize,
    old_logp: Tensor | None,
) -> tuple[LossOutputs, Correction | None]:
    """One micro-batch's forward passes (the reference's when β > 0, then the policy's) and its loss; with a
    separate sampling engine, the importance correction and its measurements."""
    device = _device(model)
    checkpointed = bool(cfg.gradient_checkpointing)
    ref = None
    with (
        _autocast(device, autocast, path),
        attention_kernels(device.type, path.packing),
        compiled_layers(model, path.compiled),
        captured_passes(model, path.graphs),
    ):
        if cfg.beta > 0:
            with torch.no_grad(), reference_pass(model):
                options = path.logprob_kwargs(mb.packed, grad=False, checkpointed=False)
                ref = completion_logprobs(model, *mb.args, temperature=cfg.temperature, **options)
        with checkpointing(model, checkpointed):
            logp, entropy = completion_logprobs(
                model,
                *mb.args,
                temperature=cfg.temperature,
                entropy_grad=cfg.entropy_coef > 0,
                **path.logprob_kwargs(mb.packed, grad=True, checkpointed=checkpointed),
            )
    return loss_of(mb, logp, entropy, ref, cfg, step, old_logp)


def loss_of(
    mb: MicroBatch,
    logp: Tensor,
    entropy: Tensor | None,
    ref: Tensor | None,
    cfg: GRPOConfig,
    step: StepSize,
    old_logp: Tensor | None,
) -> tuple[LossOutputs, Correction | None]:
    """The micro-batch's loss from its forward passes' (B, C) log-probs (``logp``, with its graph), entropies and
    reference log-probs; with a separate sampling engine, the importance correction and its measurements."""
    c = logp.shape[1]
    old = logp.detach() if old_logp is None else old_logp[mb.idx, :c]
    fix = None
    if mb.sampling_logp is not None:  # π_old (trainer) / μ (the sampler), bounded (grpo_core.update.correction)
        fix = importance_weights(
            old, mb.sampling_logp, mb.args[3], cap=cfg.tis_cap, mode=cfg.off_policy_correction,
            level=cfg.off_policy_level,
        )  # fmt: skip
    inputs = LossInputs(
        logp=logp,
        old_logp=old,
        advantages=mb.adv,
        mask=mb.args[3].float(),
        ref_logp=ref,
        entropy=entropy,
        is_weight=fix.weight if fix is not None and cfg.tis_cap is not None else None,
    )
    out = policy_loss(
        inputs,
        epsilon=cfg.epsilon,
        epsilon_high=cfg.clip_high,
        beta=cfg.beta,
        step=step,
        aggregation=cfg.loss_aggregation,
        level=cfg.importance_sampling_level,
        delta=cfg.delta,
        kl_estimator=cfg.kl_estimator,
        kl_importance_weighted=cfg.kl_importance_weighted,
        entropy_coef=cfg.entropy_coef,
        top_entropy_quantile=cfg.top_entropy_quantile,
    )
    return out, fix


def policy_update(
    model: Any,
    ro: Rollout,
    adv: Tensor,
    cfg: GRPOConfig,
    autocast: torch.dtype | None,
    old_logp: Tensor | None = None,
    world: World | None = None,
    path: UpdatePath | None = None,
) -> UpdateSums:
    """One optimizer step's gradient, accumulated over the micro-batches of ``plan_micro_batches``, summed across
    ranks, and the step's loss/clip/KL/entropy sums (over all ranks: ``UpdateSums``).

    The normalisers are the whole step's counts, so the gradient is the full-batch one for every aggregation but
    ``bnpo``, which normalises per micro-batch as TRL does (and is then the same as one process's, since the
    micro-batches are).

    The host plans and packs (the rollout, the advantages and their layout are host data); each micro-batch moves
    to the model's device without a sync, the metrics add up there (grpo_core.update.tally) and are read once at
    the end: one host sync per update on one rank (bench.update_counts). ``path``: how the passes run
    (``update_path`` of the model and config by default).
    """
    world = world or World()
    device = _device(model)
    path = path or update_path(model, cfg, world)
    ro, adv = ro.to(HOST), adv.to(HOST)
    fsdp = sharded(cfg, world)
    scheduled, step = scheduled_micro_batches(ro, adv, cfg, world, matched=fsdp, path=path)
    params = [p for p in model.parameters() if p.requires_grad]
    # Several micro-batches or ranks: the step's gradient summed in fp64 and rounded to fp32 once, so the order of
    # the additions (how micro-batches fall on ranks) never changes the result (grpo_core.hardware.distributed).
    # One micro-batch on one rank: its gradient is the step's, as autograd leaves it.
    exact_sum = len(scheduled) > 1 or world.distributed
    grad_sum = [torch.zeros_like(p, dtype=torch.float64) for p in params] if exact_sum else None
    tally = Tally(device, step.n_tokens)
    for idx, counts in scheduled:
        mb = micro_batch(ro, adv, idx, path, device, compute_dtype(model, autocast))
        out, fix = _loss(model, mb, cfg, autocast, path, step, old_logp)
        # a checkpointed layer's recompute must pick the same kernels, attend per pack and run compiled again
        with (
            attention_kernels(device.type, path.packing),
            packed_attention(model, path.packing),
            compiled_layers(model, path.compiled),
        ):
            torch.autograd.backward(out.loss if counts else out.loss * 0.0)
        if grad_sum is not None:
            for acc, p in zip(grad_sum, params, strict=True):
                if p.grad is not None:
                    acc += p.grad
                    p.grad = None
        if counts:  # a filler pass (FSDP) runs for its collectives and adds nothing
            tally.add(out)
            if fix is not None:
                tally.add_correction(fix)
    if grad_sum is not None:
        all_reduce_sum_(world, grad_sum)
    for k, p in enumerate(params):  # nothing to learn is a zero gradient, not a skipped step
        if grad_sum is not None:
            p.grad = grad_sum[k].to(p.dtype)
        elif p.grad is None:
            p.grad = torch.zeros_like(p)
    return tally.read(world, device)
