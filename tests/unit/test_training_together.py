"""``forward_backward`` calls of several training runs on one shared base in shared passes
(grpo_core.training_api.together), on the tiny random model in fp32: each call's log-probs, metrics and gradient equal
its call alone within rounding (several micro-batches, two losses, gradients already accumulated), nothing is added
where a call fails, which calls may share, and a pass of three runs launches what a pass of two does."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bench.update_counts import CountOps
from grpo_core.errors import UserError
from grpo_core.training_api.model import ForwardResult, TrainingModel
from grpo_core.training_api.shared import SharedBases
from grpo_core.training_api.spec import BatchError, Datum
from grpo_core.training_api.together import Call, forward_backward_jointly, forward_backward_together, join_key

ADAM = {"lr": 5e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0}
ATOL = 1e-5  # fp32: a log-prob, a metric or a gradient entry, joint passes against the call alone


def datum(tokens: list[int], **inputs: list[float]) -> Datum:
    n = len(tokens) - 1
    return Datum(tokens[:-1], {"target_tokens": tokens[1:], "weights": [1.0] * n, **inputs})


DATA = [
    [datum([1, 12, 13, 14, 15, 16]), datum([1, 3, 4]), datum([1, 7, 8, 9, 10, 11, 12, 13, 14])],
    [datum([1, 30, 31, 32, 33]), datum([1, 40, 41])],
    [datum([1, 50, 51, 52]), datum([1, 20, 21, 22, 23, 24, 25])],
]


def trained(model_dir: Path, shared: SharedBases | None, seed: int, **kw: object) -> TrainingModel:
    run = TrainingModel(model_dir, rank=4, seed=seed, shared=shared, **kw)  # type: ignore[arg-type]
    for _ in range(2):  # B moves off zero: the adapters differ
        run.forward_backward([datum([1, 12 + seed, 13, 14 + seed])], "cross_entropy", {})
        run.optim_step(**ADAM)
    return run


@pytest.fixture
def runs(tiny_model_dir: Path) -> list[TrainingModel]:
    shared = SharedBases()
    out = [trained(tiny_model_dir, shared, seed) for seed in (1, 2, 3)]
    for run in out:
        run.micro_batch_tokens = 12  # several micro-batches per call, several passes
    yield out
    for run in out:
        run.close()


def grads(run: TrainingModel) -> list[torch.Tensor]:
    run.hold()
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in run.params]


def values_of(run: TrainingModel) -> list[torch.Tensor]:
    run.hold()
    return [p.detach().clone() for p in run.params]


def clear(run: TrainingModel) -> None:
    run.hold()
    run.optimizer.zero_grad(set_to_none=True)


def close(got: ForwardResult | Exception, want: ForwardResult) -> None:
    assert isinstance(got, ForwardResult), got
    for x, y in zip(got.logprobs, want.logprobs, strict=True):
        assert x == pytest.approx(y, abs=ATOL, rel=0)
    assert got.metrics.keys() == want.metrics.keys()
    for k, v in want.metrics.items():
        assert got.metrics[k] == pytest.approx(v, abs=1e-4, rel=1e-5), k


def test_calls_of_three_runs_in_shared_passes_get_what_each_gets_alone(runs: list[TrainingModel]) -> None:
    a, b, c = runs
    sampled = [
        datum([1, 30, 31, 32, 33], logprobs=[-1.5, -2.0, -0.5, -1.0], advantages=[0.5] * 4),
        datum([1, 40, 41], logprobs=[-3.0, -0.2], advantages=[-1.0, -1.0]),
    ]
    calls = [
        Call(a, DATA[0], "cross_entropy", {}),
        Call(b, sampled, "importance_sampling", {}),
        Call(c, DATA[2], "cross_entropy", {}),
    ]
    a.forward_backward(DATA[2], "cross_entropy", {})  # a's gradient so far: the joint call adds to it
    before = grads(a)
    values = [values_of(run) for run in runs]
    b.hold()  # b holds the slot, a and c are parked: the passes read every run's values where they are
    together = forward_backward_together(calls)
    joint = [grads(run) for run in runs]
    for run in runs:
        clear(run)
    for call, got, want_grads, run, held in zip(calls, together, joint, runs, values, strict=True):
        assert all(torch.equal(p, v) for p, v in zip(values_of(run), held, strict=True))  # untouched
        alone = call.alone()
        close(got, alone)
        base = before if run is a else [torch.zeros_like(p) for p in run.params]
        for g, want, b0 in zip(want_grads, grads(run), base, strict=True):
            torch.testing.assert_close(g, want + b0, atol=ATOL, rtol=1e-4)
        clear(run)


def test_a_refused_or_failing_call_fails_alone_and_adds_nothing(runs: list[TrainingModel]) -> None:
    a, b, c = runs
    bad = [datum([1, 3, 4], logprobs=[-200.0, -200.0], advantages=[1.0, 1.0])]  # its ratio overflows: loss -inf
    calls = [
        Call(a, DATA[0], "cross_entropy", {}),
        Call(b, bad, "importance_sampling", {}),
        Call(c, [datum([1, 10_000, 3])], "cross_entropy", {}),  # a token beyond the vocabulary
    ]
    out = forward_backward_together(calls)
    assert isinstance(out[0], ForwardResult)
    assert isinstance(out[1], UserError) and "not finite" in str(out[1])
    assert isinstance(out[2], BatchError)
    assert all(float(g.abs().sum()) == 0 for g in grads(b) + grads(c))  # nothing added to the failed calls' runs
    mine = grads(a)
    clear(a)
    close(out[0], calls[0].alone())
    for g, want in zip(mine, grads(a), strict=True):
        torch.testing.assert_close(g, want, atol=ATOL, rtol=1e-4)


def test_forward_only_calls_share_a_pass_and_leave_no_gradient(runs: list[TrainingModel]) -> None:
    calls = [Call(run, DATA[k], "cross_entropy", {}, backward=False) for k, run in enumerate(runs)]
    out = [result for result, _ in forward_backward_jointly(calls)]
    for run, call, got in zip(runs, calls, out, strict=True):
        run.hold()
        assert all(p.grad is None for p in run.params)
        close(got, call.alone())


def test_what_may_share_a_pass(runs: list[TrainingModel], tiny_model_dir: Path) -> None:
    a, b, _ = runs
    assert join_key(Call(a, DATA[0], "cross_entropy", {})) == join_key(Call(b, DATA[1], "cross_entropy", {}))
    assert join_key(Call(a, DATA[0], "cross_entropy", {}, backward=False)) != join_key(Call(b, DATA[1], "ppo", {}))
    alone = TrainingModel(tiny_model_dir, rank=4, seed=0)  # a base of its own
    exact = TrainingModel(tiny_model_dir, rank=4, seed=0, shared=a.shared, exact=True)  # asked to compute alone
    try:
        assert join_key(Call(alone, DATA[0], "cross_entropy", {})) is None
        assert join_key(Call(exact, DATA[0], "cross_entropy", {})) is None
    finally:
        alone.close()
        exact.close()


def test_a_pass_of_three_runs_launches_what_a_pass_of_two_does(runs: list[TrainingModel]) -> None:
    def launches(n: int) -> int:
        calls = [Call(run, [datum([1, 12, 13, 14, 15])], "cross_entropy", {}) for run in runs[:n]]
        with CountOps() as counter:
            out = forward_backward_together(calls)
        assert all(isinstance(o, ForwardResult) for o in out)
        return counter.counts.launches

    two, three = launches(2), launches(3)
    alone = CountOps()
    with alone:
        runs[0].forward_backward([datum([1, 12, 13, 14, 15])], "cross_entropy", {})
    # the base model's kernels once per pass; per call only its loss, its log-probs' copy out and its gradient's sum
    per_call = three - two
    assert per_call < alone.counts.launches / 4, (two, three, alone.counts.launches)
