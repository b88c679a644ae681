"""Sample calls of several training runs decoded together, each row through its own run's adapter.

Runs that share one resident base (grpo_core.training_api.shared: the sessions a worker serves at once, or one
session's runs) each sample through a merged engine of their own: the adapter folded into a copy of the adapted
weights, one decode per run. When several runs' clients sample at the same time, their calls can instead share one
decode on the shared base: every row computes W x + (x A_k)(s B_k) with its own run's adapter k
(grpo_core.update.lora_fused.row_adapters), one batch of all their rows, one forward per token for all of them.

What may share (``join_key``): unseeded calls at temperature > 0 without prompt log-probs, sampled from a run's own
resident weights, at one temperature, nucleus and set of stop ids, on one base. Each row keeps the noise its call
draws alone (its own seed and row number, grpo_core.rollout.engines.decode), and each call is cut at its own length
and stop strings.

Exactness: a row of a joint decode is its run's sample within rounding, not bit for bit: the run alone computes
(W + s B A) x in its merged copy, here W x + (x A)(s B), and a matmul's blocking can depend on the batch. In fp32 the
log-probs agree to ~1e-6 and a sampled token differs only where two tokens' cumulative probabilities straddle the
row's uniform draw within that rounding (tests/unit/test_training_batched.py holds the bound). A call that must
draw exactly what it draws any other time gives a seed: seeded calls never join (grpo_core.training_api.sampling).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.decode import decode_continuations
from grpo_core.training_api.model import TrainingModel
from grpo_core.training_api.sampling import SampleCall, SampleOutput, Sampler, unseeded
from grpo_core.training_api.spec import BatchError, stop_lists
from grpo_core.update.lora_fused import row_adapters, rows_problem


def join_key(sampler: Sampler, call: SampleCall) -> Hashable | None:
    """The key of the joint decode ``call`` (a valid call of ``sampler``) may share with other runs' calls, or
    None when it decodes on its run's own sampler (see the module docstring)."""
    run = sampler.training
    if run is None or run.base is None or call.seed is not None or call.temperature == 0 or call.prompt_logprobs:
        return None
    if rows_problem(run.model) is not None:
        return None
    _, ids = stop_lists(call.stop)
    return (id(run.base), call.temperature, call.top_p, tuple(sorted(set(sampler.eos) | set(ids))))


def sample_jointly(parts: Sequence[tuple[Sampler, SampleCall]]) -> list[SampleOutput | Exception]:
    """Each call's output, or the exception that failed it (a BatchError refusing it, or whatever failed its decode;
    the others go on). Calls of two or more runs that may share a decode (``join_key``) share one
    (``sample_together``); every other call goes to its own sampler with the calls that came with it, which
    decodes those that can share a decode in one (Sampler.sample_many): a run sampling alone keeps its merged
    engine and what it draws alone."""
    joint: dict[Hashable, list[int]] = {}
    alone: dict[int, list[int]] = {}  # id(sampler) -> the calls it decodes itself
    for i, (sampler, call) in enumerate(parts):
        key = join_key(sampler, call)
        if key is None:
            alone.setdefault(id(sampler), []).append(i)
        else:
            joint.setdefault(key, []).append(i)
    batches: list[tuple[list[int], bool]] = [(idx, False) for idx in alone.values()]
    for idx in joint.values():
        if len({id(parts[i][0].training) for i in idx}) > 1:
            batches.append((idx, True))
        else:  # one run: its own sampler, as alone
            batches.append((idx, False))
    out: list[SampleOutput | Exception | None] = [None] * len(parts)
    for idx, together in batches:
        results: Sequence[SampleOutput | Exception]
        try:
            if together:
                results = sample_together([parts[i] for i in idx])
            else:
                results = parts[idx[0]][0].sample_many([parts[i][1] for i in idx])
        except Exception as exc:  # these calls' decode failed (their weights, their memory): the others go on
            results = [exc] * len(idx)
        for i, result in zip(idx, results, strict=True):
            out[i] = result
    return [o for o in out if o is not None]


def sample_together(items: Sequence[tuple[Sampler, SampleCall]]) -> list[SampleOutput | BatchError]:
    """Each call's output, from one decode of all their rows on the base their runs share (every item's
    ``join_key`` equal and not None), or the BatchError that refuses the call."""
    out: list[SampleOutput | BatchError | None] = [None] * len(items)
    ok: list[int] = []
    for i, (sampler, call) in enumerate(items):
        try:
            sampler.check(call)
            ok.append(i)
        except BatchError as exc:
            out[i] = exc
    if ok:
        for i, result in zip(ok, _decode([items[i] for i in ok]), strict=True):
            out[i] = result
    return [o for o in out if o is not None]


def _decode(items: list[tuple[Sampler, SampleCall]]) -> list[SampleOutput]:
    """One decode of every row of ``items``, their rows grouped by run (row_adapters' spans), then each call's rows
    cut to its own length and stop strings, in the order of ``items``."""
    runs: list[TrainingModel] = []
    for sampler, _ in items:
        run = sampler.training
        assert run is not None and run.base is not None, "join_key admits live runs only"
        if run not in runs:
            runs.append(run)
    base = runs[0].base
    assert base is not None and all(r.base is base for r in runs), "one joint decode, one shared base"
    first_sampler, first = items[0]
    stop_ids = sorted(set(first_sampler.eos) | set(stop_lists(first.stop)[1]))
    seeds = [unseeded() for _ in items]  # unseeded calls only (join_key), in the order they came
    run_of = [next(k for k, r in enumerate(runs) if r is sampler.training) for sampler, _ in items]
    order = sorted(range(len(items)), key=run_of.__getitem__)  # stable: each run's calls in the order they came
    calls = [items[i][1] for i in order]
    counts = [sum(items[i][1].num_samples for i in order if run_of[i] == k) for k in range(len(runs))]
    sampling = Sampling(
        group_size=1,
        max_new_tokens=max(c.max_tokens for c in calls),
        temperature=first.temperature,
        top_p=first.top_p,
        seed=seeds[0],
    )
    pad = first_sampler.tokenizer.pad_token_id
    with row_adapters(base.model, [base.values_of(r) for r in runs], base.slot, counts):
        raw = decode_continuations(
            base.model.get_base_model(),  # the transformers model, its LoRA layers fused
            [list(c.prompt) for c in calls for _ in range(c.num_samples)],
            sampling,
            [j for c in calls for j in range(c.num_samples)],
            stop_ids=stop_ids,
            pad_id=pad if pad is not None else first_sampler.eos[0],
            seeds=[seeds[i] for i, c in zip(order, calls, strict=True) for _ in range(c.num_samples)],
        )
    outputs: list[SampleOutput | None] = [None] * len(items)
    start = 0
    for i, call in zip(order, calls, strict=True):
        sampler = items[i][0]
        outputs[i] = sampler.output(call, raw[start : start + call.num_samples], stop_ids, len(items))
        start += call.num_samples
    for sampler in {id(s): s for s, _ in items}.values():
        sampler.decodes += 1
    return [o for o in outputs if o is not None]
