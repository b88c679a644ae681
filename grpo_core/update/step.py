"""The policy update for one sampled batch: micro-batched forward/backward with an exact full-batch gradient.

Kept apart from the loop (grpo_core.trainer) so the loop reads as the algorithm and this as the arithmetic. With
several ranks (grpo_core.hardware.distributed) the micro-batches are planned over the whole batch, as one process plans
them, and dealt to the ranks in a snake order; each rank backpropagates its own, and the gradients and the sums
are reduced here, so the caller sees the one-process result.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields, replace
from typing import Any, TypedDict

import torch

from grpo_core.hardware.device import HOST
from grpo_core.hardware.distributed import World, all_reduce_sum_, reduce_sums
from grpo_core.hardware.memory import checkpointing
from grpo_core.hardware.sharding import sharded
from grpo_core.models.prefix_cache import shared_prefixes
from grpo_core.rollout.batch import Rollout
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.compiled import compiled_layers
from grpo_core.update.correction import Correction, importance_weights
from grpo_core.update.logprobs import completion_logprobs
from grpo_core.update.loss import LossInputs, StepSize, policy_loss
from grpo_core.update.packing import Packed, head_problem, pack, packed_attention, packing_problem, span_lengths


@dataclass
class UpdateSums:
    """What one optimizer step's update adds up over its micro-batches (and ranks), for grpo_core.metrics to divide:
    per-token means are over ``updated_tokens``, the tokens that carried loss, so no micro-batch split changes them.

    ``is_weight_sum`` and ``logp_diff_max`` measure a separate sampling engine (merged, vLLM) against the trainer:
    None when the trainer's own forward sampled (no importance correction, nothing to measure)."""

    loss: float = 0.0  # Σ of the micro-batches' losses, each normalised by the step's counts: the step's loss
    updated_tokens: float = 0.0  # tokens that carried loss
    clipped_tokens: float = 0.0  # of those, clipped on either side
    clipped_low_tokens: float = 0.0
    clipped_high_tokens: float = 0.0
    kl_sum: float = 0.0  # Σ of the per-token KL estimate (β > 0)
    entropy_sum: float = 0.0
    is_weight_sum: float | None = None  # Σ of the bounded importance weights π_trainer / π_engine
    logp_diff_max: float | None = None  # the largest |log π_trainer − log π_engine| of a token
    is_weight_max: float | None = None  # the largest importance weight before its bound
    is_bounded_tokens: float | None = None  # tokens whose weight the bound truncated (TIS) or masked (MIS)
    mismatch_kl_sum: float | None = None  # Σ of the per-token k3 estimate of KL(π_engine ‖ π_trainer)
    tokens: float = 0.0  # the step's completion tokens, all ranks' (StepSize.n_tokens): not summed again

    def add_correction(self, fix: Correction) -> None:
        """Add one micro-batch's importance-weight measurements."""
        self.is_weight_sum = (self.is_weight_sum or 0.0) + fix.weight_sum
        self.logp_diff_max = max(self.logp_diff_max or 0.0, fix.logp_diff_max)
        self.is_weight_max = max(self.is_weight_max or 0.0, fix.weight_max)
        self.is_bounded_tokens = (self.is_bounded_tokens or 0.0) + fix.bounded_tokens
        self.mismatch_kl_sum = (self.mismatch_kl_sum or 0.0) + fix.kl_sum

    def reduced(self, world: World, device: torch.device) -> UpdateSums:
        """These sums over every rank, in fp64 (grpo_core.hardware.distributed.reduce_sums: a field's name is its
        key, so ``logp_diff_max`` is the maximum over the ranks); a measurement no rank made stays None."""
        mine = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tokens"}
        out = reduce_sums(world, {k: v for k, v in mine.items() if v is not None}, device)
        return UpdateSums(**out, tokens=self.tokens)


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
    decoder layers under torch.compile (grpo_core.update.compiled)."""

    packing: bool = False
    fused_head: bool = False
    share_prefix: bool = True
    compiled: bool = False

    def pack(self, args: tuple[torch.Tensor, ...]) -> Packed | None:
        """The micro-batch ``args`` (``_micro_args``) packed once for all its passes (reference, policy, π_old);
        None when padded, or when it has no loss token (``completion_logprobs`` then runs a plain padded pass)."""
        if not self.packing or not bool(args[3].any()):
            return None
        return pack(*args, share_prefix=self.share_prefix)

    def logprob_kwargs(self, packed: Packed | None, *, grad: bool, checkpointed: bool) -> LogprobOptions:
        """``completion_logprobs``' keywords for a pass over the micro-batch ``packed`` (``pack``): a padded pass
        with gradients through checkpointed layers does not share prefixes."""
        share = self.share_prefix and (self.packing or not (grad and checkpointed))
        return LogprobOptions(share_prefix=share, packing=self.packing, fused_head=self.fused_head, packed=packed)


def update_path(model: Any, cfg: GRPOConfig, world: World) -> UpdatePath:
    """The path ``cfg`` asks for, as far as ``model`` and the layout allow. Under FSDP every pass is padded and
    unshared: the root module's hooks must run (the decoder is not called apart from the head) and every rank must
    run the same passes (grpo_core.hardware.sharding)."""
    if sharded(cfg, world):
        return UpdatePath(share_prefix=False)
    return UpdatePath(
        packing=cfg.packing and packing_problem(model) is None,
        fused_head=cfg.fused_lm_head and head_problem(model) is None,
        compiled=cfg.compile_update,
    )


def unpacked_reason(model: Any, cfg: GRPOConfig, world: World) -> str:
    """Why ``update_path`` runs padded micro-batches although ``cfg.packing`` asks for packed ones."""
    if sharded(cfg, world):
        return "FSDP sharding runs every pass padded"
    return packing_problem(model) or "no reason"


def attention_kernels(device: str) -> Any:
    """On CPU, SDPA's math kernels for the update: PyTorch's CPU flash-attention backward is the slower one at a
    GRPO micro-batch's shapes (bench.update_ab: docs/benchmarks.md, "What each optimization buys");
    elsewhere the default choice (flash / memory-efficient on GPU)."""
    if device != "cpu":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


def _device(model: Any) -> torch.device:
    """The model's device: the rollout moves there, and every tensor of the update is created there."""
    device: torch.device = next(model.parameters()).device
    return device


def _micro_args(ro: Rollout, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
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


@torch.no_grad()
def old_logprobs(
    model: Any,
    ro: Rollout,
    adv: torch.Tensor,
    cfg: GRPOConfig,
    autocast: torch.dtype | None,
    world: World,
    path: UpdatePath | None = None,
) -> torch.Tensor:
    """(B, C) log-probs under the policy that sampled (before any update of this step), for the rows of this rank's
    micro-batches (``plan_micro_batches``, on ``path``: ``update_path`` by default, as ``policy_update``); 0 past
    each mask and on the other ranks' rows, which it never reads."""
    device = _device(model)
    path = path or update_path(model, cfg, world)
    ro, adv = ro.to(device), adv.to(device)
    n, c = ro.completion_ids.shape
    old = torch.zeros(n, c, device=device)
    fsdp = sharded(cfg, world)
    for idx, counts in scheduled_micro_batches(ro, adv, cfg, world, matched=fsdp, path=path)[0]:
        args = _micro_args(ro, idx)
        options = path.logprob_kwargs(path.pack(args), grad=False, checkpointed=False)
        with (
            torch.autocast(device.type, dtype=autocast, enabled=autocast is not None),
            compiled_layers(model, path.compiled),
        ):
            logp = completion_logprobs(model, *args, temperature=cfg.temperature, **options)
        if counts:
            old[idx, : args[2].shape[1]] = logp
    return old


def policy_update(
    model: Any,
    ro: Rollout,
    adv: torch.Tensor,
    cfg: GRPOConfig,
    autocast: torch.dtype | None,
    old_logp: torch.Tensor | None = None,
    world: World | None = None,
    path: UpdatePath | None = None,
) -> UpdateSums:
    """One optimizer step's gradient, accumulated over the micro-batches of ``plan_micro_batches``, summed across
    ranks, and the step's loss/clip/KL/entropy sums (over all ranks: ``UpdateSums``).

    The normalisers are the whole step's counts, so the gradient is the full-batch one for every aggregation but
    ``bnpo``, which normalises per micro-batch as TRL does (and is then the same as one process's, since the
    micro-batches are).

    The rollout, the advantages and π_old move to the model's device here, once; everything after is created on
    that device. ``path``: how the passes run (``update_path`` of the model and config by default).
    """
    world = world or World()
    device = _device(model)
    path = path or update_path(model, cfg, world)
    ro, adv = ro.to(device), adv.to(device)
    old_logp = None if old_logp is None else old_logp.to(device)
    fsdp = sharded(cfg, world)
    checkpointed = bool(cfg.gradient_checkpointing)
    scheduled, step = scheduled_micro_batches(ro, adv, cfg, world, matched=fsdp, path=path)
    params = [p for p in model.parameters() if p.requires_grad]
    # The step's gradient, summed in fp64 over micro-batches and ranks and rounded to fp32 once: the order of the
    # additions (how micro-batches fall on ranks) then never changes the result (grpo_core.hardware.distributed).
    grad_sum = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    sums = UpdateSums(tokens=step.n_tokens)
    for idx, counts in scheduled:
        args = _micro_args(ro, idx)
        packed = path.pack(args)  # one pack for the reference and the policy pass
        ref = None
        with (
            torch.autocast(device.type, dtype=autocast, enabled=autocast is not None),
            attention_kernels(device.type),
            compiled_layers(model, path.compiled),
        ):
            if cfg.beta > 0:
                with torch.no_grad(), model.disable_adapter():
                    options = path.logprob_kwargs(packed, grad=False, checkpointed=False)
                    ref = completion_logprobs(model, *args, temperature=cfg.temperature, **options)
            with checkpointing(model, checkpointed):
                logp, entropy = completion_logprobs(
                    model,
                    *args,
                    temperature=cfg.temperature,
                    entropy_grad=cfg.entropy_coef > 0,
                    **path.logprob_kwargs(packed, grad=True, checkpointed=checkpointed),
                )
        old = logp.detach() if old_logp is None else old_logp[idx, : logp.shape[1]]
        is_weight = None
        if ro.sampling_logp is not None:  # π_old (trainer) / μ (the sampler), bounded (grpo_core.update.correction)
            fix = importance_weights(
                old,
                ro.sampling_logp[idx, : logp.shape[1]],
                args[3],
                cap=cfg.tis_cap,
                mode=cfg.off_policy_correction,
                level=cfg.off_policy_level,
            )
            is_weight = fix.weight if cfg.tis_cap is not None else None
            if counts:
                sums.add_correction(fix)
        out = policy_loss(
            LossInputs(
                logp=logp,
                old_logp=old,
                advantages=adv[idx],
                mask=args[3].float(),
                ref_logp=ref,
                entropy=entropy,
                is_weight=is_weight,
            ),
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
        # a checkpointed layer's recompute must pick the same kernels, attend per segment and run compiled again
        with (
            attention_kernels(device.type),
            packed_attention(model, path.packing),
            compiled_layers(model, path.compiled),
        ):
            torch.autograd.backward(out.loss if counts else out.loss * 0.0)
        for acc, p in zip(grad_sum, params, strict=True):
            if p.grad is not None:
                acc += p.grad
                p.grad = None
        if not counts:  # a filler pass (FSDP): run for its collectives, adds nothing
            continue
        sums.loss += float(out.loss.detach())
        sums.updated_tokens += out.metrics["tokens"]
        sums.clipped_tokens += out.metrics["clipped_tokens"]
        sums.clipped_low_tokens += out.metrics["clipped_low_tokens"]
        sums.clipped_high_tokens += out.metrics["clipped_high_tokens"]
        sums.kl_sum += out.metrics["kl_sum"]
        sums.entropy_sum += out.metrics["entropy_sum"]
    all_reduce_sum_(world, grad_sum)
    for acc, p in zip(grad_sum, params, strict=True):  # nothing to learn is a zero gradient, not a skipped step
        p.grad = acc.to(p.dtype)
    return sums.reduced(world, device)
