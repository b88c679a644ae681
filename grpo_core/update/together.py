"""Several pool tenants' update passes run as one: their micro-batches packed into one sequence, each token through
its own tenant's adapter (grpo_core.update.lora_fused.token_adapters), each tenant's loss normalised by its own
step's counts and its gradient landing on its own adapter only.

Why: on a GPU an update of one small job's batch is bound by kernel launches, not arithmetic (bench.update_counts);
a pass over every tenant's micro-batches launches the base model's kernels once for all of them (the adapters add
two matmuls per layer whatever their number). grpo_core.joint gathers the tenants of a pool that update at once and
calls ``policy_updates_together``.

What may share a pass (``together_key``): the packed path (grpo_core.update.packing) without captured graphs or
torch.compile, in one process, and equal in what a pass computes for every token: the temperature, the fused head,
prefix sharing, gradient checkpointing, the compute dtype, whether a reference pass and an entropy gradient run.

Each tenant's micro-batches are those its update alone plans (``plan_micro_batches``: its own rows, its own loss
normalisers); passes take them in order, the tenants' k-th micro-batches together, as many as fit in the smallest
of the tenants' ``micro_batch_tokens`` (one tenant's activation budget). Rounding: a token's forward runs in a wider
pack and its adapter beside W (``token_adapters``), so each tenant's gradient equals its update alone's within
rounding, not bit for bit (tests/unit/test_update_together.py holds the bound).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import torch
from torch import Tensor

from grpo_core.hardware.device import HOST, to_device
from grpo_core.hardware.distributed import World
from grpo_core.hardware.memory import checkpointing
from grpo_core.rollout.batch import Rollout
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.attention import AttentionRow
from grpo_core.update.logprobs import compute_dtype, packed_token_logprobs
from grpo_core.update.lora_fused import reference_pass, token_adapters
from grpo_core.update.loss import LossOutputs, StepSize
from grpo_core.update.packing import Packed, pack, packed_attention
from grpo_core.update.step import (
    MicroBatch,
    UpdatePath,
    attention_kernels,
    loss_of,
    micro_args,
    micro_batch,
    scheduled_micro_batches,
)
from grpo_core.update.tally import Tally, UpdateSums

T = TypeVar("T")


@dataclass(frozen=True)
class Part:
    """One tenant's update: ``policy_update``'s arguments, and its adapter's values in slot order."""

    ro: Rollout
    adv: Tensor
    cfg: GRPOConfig
    autocast: torch.dtype | None
    old_logp: Tensor | None
    path: UpdatePath
    values: Sequence[Tensor]


def together_key(cfg: GRPOConfig, autocast: torch.dtype | None, path: UpdatePath, world: World) -> Hashable | None:
    """The key of the passes an update may share with other tenants' (see the module docstring), or None when it
    runs alone (``policy_update``)."""
    if world.distributed or not path.packing or path.captured or path.compiled:
        return None
    ckpt = bool(cfg.gradient_checkpointing)
    return (cfg.temperature, path.fused_head, path.share_prefix, ckpt, autocast, cfg.beta > 0, cfg.entropy_coef > 0)


def concat_packs(packs: Sequence[Packed]) -> Packed:
    """Host packs (``pack``) as one: their sequences one after the other, nothing attending across them, their loss
    tokens in order, their rows numbered on (pack k's rows after pack k-1's), the columns as wide as the widest."""
    tokens = rows = 0
    attention: list[AttentionRow] = []
    source: list[Tensor] = []
    row_ids: list[Tensor] = []
    for p in packs:
        attention += [replace(a, q_start=a.q_start + tokens, p_start=a.p_start + tokens) for a in p.attention]
        source.append(p.source + tokens)
        row_ids.append(p.rows + rows)
        tokens += p.input_ids.shape[1]
        rows += p.shape[0]
    return Packed(
        input_ids=torch.cat([p.input_ids for p in packs], dim=1),
        position_ids=torch.cat([p.position_ids for p in packs], dim=1),
        attention=tuple(attention),
        source=torch.cat(source),
        targets=torch.cat([p.targets for p in packs]),
        rows=torch.cat(row_ids),
        cols=torch.cat([p.cols for p in packs]),
        shape=(rows, max(p.shape[1] for p in packs)),
    )


@dataclass(eq=False)
class _Item:
    """One micro-batch of one tenant: on the device for its loss (``mb``), packed on the host for the pass."""

    part: int
    mb: MicroBatch
    pack: Packed | None  # None: no loss token (its loss is 0 and it joins no pass)
    counts: bool

    @property
    def tokens(self) -> int:
        return 0 if self.pack is None else int(self.pack.input_ids.shape[1])


@dataclass
class _Tenant:
    """What one tenant's update adds up: its step's counts, its metrics, its gradient."""

    step: StepSize
    tally: Tally
    grads: list[Tensor | None]
    exact: bool  # several micro-batches: the gradient summed in fp64, rounded once (as ``policy_update``)


def policy_updates_together(
    model: Any, slot: Sequence[Tensor], parts: Sequence[Part], world: World
) -> list[tuple[UpdateSums, list[Tensor]]]:
    """Each part's update sums and gradient (in slot order), its micro-batches run in passes shared with the other
    parts' (every part's ``together_key`` equal and not None). ``model``: the pool's policy, its LoRA layers fused;
    ``slot``: its LoRA parameters (whose values are not read: each part brings its own)."""
    device = next(model.parameters()).device
    first = parts[0]
    dtype = compute_dtype(model, first.autocast)
    items: list[_Item] = []
    tenants: list[_Tenant] = []
    for k, p in enumerate(parts):
        ro, adv = p.ro.to(HOST), p.adv.to(HOST)
        scheduled, step = scheduled_micro_batches(ro, adv, p.cfg, world, matched=False, path=p.path)
        tenants.append(_Tenant(step, Tally(device, step.n_tokens), [None] * len(slot), len(scheduled) > 1))
        padded = replace(p.path, packing=False)  # the loss reads the padded tensors; the pass packs them itself
        for idx, counts in scheduled:
            args = micro_args(ro, idx)
            packed = pack(*args, share_prefix=p.path.share_prefix) if bool(args[3].any()) else None
            items.append(_Item(k, micro_batch(ro, adv, idx, padded, device, dtype, args), packed, counts))
    for item in items:
        if item.pack is None:  # nothing to learn: its zero loss counted, as a pass of it alone counts it
            out, _ = loss_of(item.mb, _zeros(item.mb), None, None, parts[item.part].cfg, tenants[item.part].step, None)
            tenants[item.part].tally.add(out)
    budget = min(p.cfg.micro_batch_tokens for p in parts)
    plans = [[i for i in items if i.part == k and i.pack is not None] for k in range(len(parts))]
    for group in ranked_passes(plans, lambda i: i.tokens, budget):
        _pass(model, slot, parts, tenants, group, device, dtype)
    results = []
    for t in tenants:
        grads = [torch.zeros_like(s) if g is None else g.to(s.dtype) for g, s in zip(t.grads, slot, strict=True)]
        results.append((t.tally.read(world, device), grads))
    return results


def _zeros(mb: MicroBatch) -> Tensor:
    return torch.zeros(mb.args[2].shape, dtype=torch.float32, device=mb.args[2].device)


def ranked_passes(plans: Sequence[Sequence[T]], size: Callable[[T], int], budget: int) -> list[list[T]]:
    """Several tenants' micro-batches (``plans[k]``: tenant k's, in its own order) in passes of at most ``budget``
    tokens (``size``), in order: every tenant's first micro-batch, then every tenant's second, and so on (one over
    the budget runs in a pass of its own). The training API's calls share passes the same way
    (grpo_core.training_api.together)."""
    order = [p[rank] for rank in range(max(map(len, plans), default=0)) for p in plans if rank < len(p)]
    passes: list[list[T]] = []
    tokens = 0
    for item in order:
        n = size(item)
        if not passes or tokens + n > budget:
            passes.append([])
            tokens = 0
        passes[-1].append(item)
        tokens += n
    return passes


def _pass(
    model: Any,
    slot: Sequence[Tensor],
    parts: Sequence[Part],
    tenants: list[_Tenant],
    group: list[_Item],
    device: torch.device,
    dtype: torch.dtype,
) -> None:
    """One forward/backward of ``group``'s micro-batches packed together, each tenant's loss and gradient its own."""
    cfg, path = parts[group[0].part].cfg, parts[group[0].part].path
    packs = [i.pack for i in group if i.pack is not None]
    joint = concat_packs(packs).to(device, dtype)
    adapters = [parts[i.part].values for i in group]
    autocast = parts[group[0].part].autocast
    cast = torch.autocast(device.type, dtype=autocast) if autocast is not None else contextlib.nullcontext()
    with token_adapters(model, adapters, slot, [i.tokens for i in group]) as leaves:
        with cast, attention_kernels(device.type, True):
            ref = None
            if cfg.beta > 0:
                with torch.no_grad(), reference_pass(model):
                    ref, _ = packed_token_logprobs(
                        model, joint, temperature=cfg.temperature, fused_head=path.fused_head
                    )
            with checkpointing(model, bool(cfg.gradient_checkpointing)):
                logp, entropy = packed_token_logprobs(
                    model, joint, temperature=cfg.temperature, entropy_grad=cfg.entropy_coef > 0,
                    fused_head=path.fused_head,
                )  # fmt: skip
        losses: list[Tensor] = []
        start = 0
        for item in group:
            assert item.pack is not None
            n = item.pack.loss_tokens
            part, tenant = parts[item.part], tenants[item.part]
            where = (to_device(item.pack.rows, device), to_device(item.pack.cols, device), item.pack.shape, start, n)
            own = _own(logp, *where)
            assert own is not None
            out, fix = loss_of(
                item.mb, own, _own(entropy, *where), _own(ref, *where), part.cfg, tenant.step, part.old_logp
            )
            losses.append(out.loss if item.counts else out.loss * 0.0)
            _tally(tenant, out, fix, item.counts)
            start += n
        with attention_kernels(device.type, True), packed_attention(model, True):
            torch.autograd.backward(torch.stack(losses).sum())
        for k, item in enumerate(group):
            _add(tenants[item.part], leaves.grads(k))


def _own(
    values: Tensor | None, rows: Tensor, cols: Tensor, shape: tuple[int, int], start: int, n: int
) -> Tensor | None:
    """A micro-batch's (B, C) values from the pass's loss tokens ``start : start + n`` (0 where it has none)."""
    if values is None:
        return None
    return values.new_zeros(shape, dtype=torch.float32).index_put((rows, cols), values[start : start + n].float())


def _tally(tenant: _Tenant, out: LossOutputs, fix: Any, counts: bool) -> None:
    if counts:
        tenant.tally.add(out)
        if fix is not None:
            tenant.tally.add_correction(fix)


def _add(tenant: _Tenant, grads: list[Tensor | None]) -> None:
    """Add one micro-batch's gradient to the tenant's: in fp64 when it has several (``policy_update``'s exact sum)."""
    for i, g in enumerate(grads):
        if g is None:
            continue
        have = tenant.grads[i]
        if have is None:
            tenant.grads[i] = g.double() if tenant.exact else g.clone()
        else:
            have += g
