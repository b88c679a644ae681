"""``forward_backward`` calls of several training runs on one shared base computed in shared passes, each token
through its own run's adapter: the training API's side of a pool's joint update (grpo_core.update.together).

Why: sessions pooled on a worker (grpo_core.training_api.shared) each send small batches; on a GPU a forward/backward
of one run's batch is bound by kernel launches, not arithmetic. When several runs' calls are pending at once, one
pass over all their datums launches the base model's kernels once for all of them; the adapters add two matmuls per
layer whatever their number (grpo_core.update.lora_fused.token_adapters).

What may share a pass (``join_key``): runs on one shared base whose model packs datums (the packed path), that did
not ask to compute alone (``TrainingModel.exact``), forward-only calls with forward-only calls and backward with
backward. The passes run eagerly, whatever the runs would replay alone on a GPU (captured graphs).

Each call is planned as ``TrainingModel.forward_backward`` plans it alone (its datums in micro-batches of at most its
``micro_batch_tokens``); the passes take the calls' k-th micro-batches together, as many as fit in the smallest
budget. A call's loss is a sum over its tokens (grpo_core.training_api.losses), so its part of a pass is its own loss
and its gradient lands on its own adapter only; the gradients are added to each run's accumulated ones
(``Resident.add_grads``) only once every pass succeeded, so a call adds its whole gradient or none, as alone.

Exactness: a token's forward runs in a wider pack with its adapter beside W, so log-probs, metrics and gradients equal
each run's call alone within rounding, not bit for bit (tests/unit/test_training_together.py holds the bound). A run
created with ``exact`` (the SDK's ``user_metadata={"pool_exact": "true"}``) never shares a pass.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from grpo_core.errors import UserError
from grpo_core.hardware.device import HOST, release_device_memory
from grpo_core.training_api.losses import loss_of
from grpo_core.training_api.model import ForwardResult, TrainingModel, micro_batches
from grpo_core.training_api.spec import BatchError, Datum, check_batch, loss_spec
from grpo_core.update.logprobs import compute_dtype, packed_token_logprobs
from grpo_core.update.lora_fused import rows_problem, token_adapters
from grpo_core.update.packing import pack_sequences, packed_attention
from grpo_core.update.step import attention_kernels
from grpo_core.update.together import ranked_passes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Call:
    """One ``forward_backward`` (or, without ``backward``, ``forward``) call of one run."""

    run: TrainingModel
    data: list[Datum]
    loss_fn: str
    config: dict[str, float]
    backward: bool = True

    def alone(self) -> ForwardResult:
        return self.run.forward_backward(self.data, self.loss_fn, self.config, backward=self.backward)


def join_key(call: Call) -> Hashable | None:
    """The key of the passes ``call`` may share with other runs' calls, or None when it computes alone (see the
    module docstring)."""
    run = call.run
    if run.base is None or run.exact or not run.packed or rows_problem(run.model) is not None:
        return None
    return (id(run.base), call.backward)


def forward_backward_jointly(calls: Sequence[Call]) -> list[tuple[ForwardResult | Exception, float]]:
    """Each call's result (or the exception that failed it alone) and the device seconds it caused: its own call's,
    or its tokens' share of the passes it shared. Calls of two or more runs that may share passes (``join_key``)
    share them (``forward_backward_together``); every other call runs on its own run."""
    groups: dict[Hashable, list[int]] = {}
    out: list[tuple[ForwardResult | Exception, float] | None] = [None] * len(calls)
    for i, call in enumerate(calls):
        key = join_key(call)
        groups.setdefault(("alone", i) if key is None else key, []).append(i)
    for idx in groups.values():
        shared = len({id(calls[i].run) for i in idx}) > 1
        if shared:
            log.info("forward_backward calls of %d runs in shared passes", len(idx))
        started = time.perf_counter()
        results = forward_backward_together([calls[i] for i in idx]) if shared else [_alone(calls[i]) for i in idx]
        seconds = time.perf_counter() - started
        tokens = [sum(len(d.tokens) for d in calls[i].data) for i in idx]
        for i, result, n in zip(idx, results, tokens, strict=True):
            out[i] = (result, seconds * n / max(sum(tokens), 1))
    assert all(o is not None for o in out), "every call answered"
    return [o for o in out if o is not None]


def forward_backward_together(calls: Sequence[Call]) -> list[ForwardResult | Exception]:
    """Each call's result from passes shared by all of them (their ``join_key`` equal and not None), a
    BatchError for a call ``check_batch`` refuses; if the shared passes fail (one call's non-finite loss, the
    passes' memory), each call runs again alone, so a failure ends only the call it is due to."""
    out: list[ForwardResult | Exception | None] = [None] * len(calls)
    ok: list[int] = []
    for i, c in enumerate(calls):
        try:
            check_batch(c.loss_fn, c.data, c.config, c.run.vocab_size, c.run.max_tokens)
            ok.append(i)
        except BatchError as exc:
            out[i] = exc
    if len(ok) == 1:
        out[ok[0]] = _alone(calls[ok[0]])
    elif ok:
        try:
            for i, result in zip(ok, _together([calls[i] for i in ok]), strict=True):
                out[i] = result
        except Exception as exc:
            log.warning("a joint forward_backward of %d runs failed (%s: %s); each runs alone", len(ok), type(exc), exc)
            release_device_memory()
            for i in ok:
                out[i] = _alone(calls[i])
    assert all(o is not None for o in out), "every call answered"
    return [o for o in out if o is not None]


def _alone(call: Call) -> ForwardResult | Exception:
    try:
        return call.alone()
    except Exception as exc:  # the request's boundary: it fails alone
        return exc


@dataclass(eq=False)
class _Part:
    """One call's micro-batch in a pass, and what the call adds up over its passes."""

    call: int
    idx: list[int]  # its datums in this micro-batch


@dataclass(eq=False)
class _Sums:
    """A call's loss inputs (host), lengths, per-datum log-probs and gradient, over its passes."""

    inputs: list[dict[str, Tensor]]
    lengths: list[int]
    logprobs: list[Tensor] = field(default_factory=list)
    grads: list[Tensor | None] = field(default_factory=list)


def _together(calls: Sequence[Call]) -> list[ForwardResult]:
    """The calls' results from shared passes; nothing is added to any run until every pass succeeded."""
    base = calls[0].run.base
    assert base is not None and all(c.run.base is base for c in calls), "one shared base"
    sums = []
    for c in calls:
        name = loss_spec(c.loss_fn).name
        inputs = [c.run.loss_inputs(name, d, c.config) for d in c.data]
        lengths = [len(d.tokens) for d in c.data]
        sums.append(_Sums(inputs, lengths, [torch.empty(0, device=HOST)] * len(c.data), [None] * len(base.slot)))
    plans = [micro_batches(s.lengths, c.run.micro_batch_tokens, packed=True) for c, s in zip(calls, sums, strict=True)]
    budget = min(c.run.micro_batch_tokens for c in calls)
    parts = [[_Part(k, idx) for idx in plan] for k, plan in enumerate(plans)]
    for group in ranked_passes(parts, lambda p: sum(sums[p.call].lengths[i] for i in p.idx), budget):
        _pass(calls, sums, group)
    results = []
    for c, s in zip(calls, sums, strict=True):
        spec = loss_spec(c.loss_fn)
        everything = {k: torch.cat([x[k] for x in s.inputs]) for k in spec.inputs}
        metrics = loss_of(c.loss_fn, torch.cat(s.logprobs), everything, c.config, s.lengths).metrics
        results.append(ForwardResult([x.tolist() for x in s.logprobs], metrics))
    for c, s in zip(calls, sums, strict=True):  # last: a failure above adds nothing anywhere
        if c.backward:
            base.add_grads(c.run, s.grads)
    return results


def _pass(calls: Sequence[Call], sums: list[_Sums], group: list[_Part]) -> None:
    """One forward (and backward) of ``group``'s micro-batches packed together, each call's tokens through its own
    run's adapter; each call's log-probs and gradient kept in its sums."""
    first = calls[group[0].call].run
    base = first.base
    assert base is not None
    model, device, backward = base.model, first.device, calls[group[0].call].backward
    data = [calls[p.call].data[i] for p in group for i in p.idx]
    packed = pack_sequences([list(d.tokens) for d in data], [[int(t) for t in d.inputs["target_tokens"]] for d in data])
    counts = [sum(sums[p.call].lengths[i] for i in p.idx) for p in group]
    adapters = [base.values_of(calls[p.call].run) for p in group]
    with torch.set_grad_enabled(backward), token_adapters(model, adapters, base.slot, counts) as leaves:
        losses = []
        with first.autocast(), attention_kernels(device.type, True):
            logp, _ = packed_token_logprobs(model, packed.to(device, compute_dtype(model)), temperature=1.0)  # (N,)
            on_host = torch.split(logp.detach().to(HOST), counts)  # one copy for the pass
            for p, own, host in zip(group, torch.split(logp, counts), on_host, strict=True):
                c, s = calls[p.call], sums[p.call]
                lengths = [s.lengths[i] for i in p.idx]
                for i, part in zip(p.idx, torch.split(host, lengths), strict=True):
                    s.logprobs[i] = part
                if backward:
                    names = loss_spec(c.loss_fn).inputs
                    batch = {k: torch.cat([s.inputs[i][k] for i in p.idx]).to(device) for k in names}
                    losses.append(loss_of(c.loss_fn, own, batch, c.config, lengths).loss)
        if backward:
            total = torch.stack(losses).sum()
            if not torch.isfinite(total):  # one wait for the pass; the calls rerun alone say whose loss it was
                raise UserError("a loss of the pass is not finite")
            with attention_kernels(device.type, True), packed_attention(model, True):
                torch.autograd.backward(total)
            for k, p in enumerate(group):
                _add(sums[p.call], leaves.grads(k))


def _add(sums: _Sums, grads: list[Tensor | None]) -> None:
    for i, g in enumerate(grads):
        if g is not None:
            have = sums.grads[i]
            sums.grads[i] = g.clone() if have is None else have + g
