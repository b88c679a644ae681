"""The captured update (grpo_core.update.captured) on a CPU: what a CUDA graph would replay, checked without one.

A graph records one pack's kernels and replays them for every later pack of its bucket. So the padded passes must
compute what the eager ones do (log-probs, entropies, LoRA gradients), launch the very same ops with the same
shapes and arguments for any two packs of a bucket, and hold nothing a capture refuses: no host sync, no copy
between the host and the device, no tensor made from Python data (checked with the model on ``meta``, where the
host and the device are told apart, as bench.update_counts finds syncs)."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from grpo_core.update import captured
from grpo_core.update.captured import bucket_of, bucket_size, capture_problem, static_pack
from grpo_core.update.logprobs import packed_token_logprobs
from grpo_core.update.packing import pack
from tests.capture_checks import CaptureRefusals
from tests.training import nontrivial_policy
from tests.unit.test_packing import ATOL, _batch, _rollout


def test_buckets_pad_by_under_an_eighth_and_are_few() -> None:
    sizes = {n: bucket_size(n) for n in range(1, 70_000)}  # fmt: skip
    assert all(n <= b for n, b in sizes.items())
    assert all(b - n < max(16, n / 8) for n, b in sizes.items())
    assert len({b for n, b in sizes.items() if 4096 < n <= 8192}) == 8  # eight per doubling
    assert (bucket_size(4200), bucket_size(16), bucket_size(17)) == (4608, 16, 18)


def test_a_static_pack_pads_with_rows_of_its_own_within_the_bucket() -> None:
    packed = pack(*_batch(), share_prefix=True)
    static = static_pack(packed)
    b = static.bucket
    assert b == bucket_of(packed) and b is not None
    assert static.input_ids.shape == (1, b.tokens) and len(static.attention) == b.rows
    assert static.source.shape == static.targets.shape == (b.loss_tokens,)
    assert static.loss_tokens == packed.loss_tokens and torch.equal(static.rows, packed.rows)
    assert static.attention[: len(packed.attention)] == packed.attention
    pads = static.attention[len(packed.attention) :]
    assert all(r.p_len == 0 and 1 <= r.q_len <= min(b.queries, b.keys) for r in pads)
    assert max(r.q_len for r in static.attention) <= b.queries
    with pytest.raises(ValueError, match="does not fit"):
        static_pack(packed, dataclasses.replace(b, queries=b.queries // 2))
    with pytest.raises(ValueError, match=r"before Packed\.to"):
        static_pack(packed.to(torch.device("cpu")))


@pytest.mark.parametrize("grad", [True, False])
def test_padded_passes_compute_the_eager_ones(tiny_model_dir: Path, grad: bool) -> None:
    """Log-probs, entropies and every LoRA gradient of a bucketed pack equal the unpadded pack's in fp32."""
    model = nontrivial_policy(tiny_model_dir)
    packed = pack(*_batch(), share_prefix=True)
    results = []
    for p in (packed, static_pack(packed)):
        model.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(grad):
            logp, entropy = packed_token_logprobs(model, p.to(torch.device("cpu")), temperature=0.7, entropy_grad=grad)
        assert entropy is not None and logp.shape == (packed.loss_tokens,)
        if grad:
            weights = torch.linspace(-1.0, 1.0, logp.numel())
            ((logp * weights).sum() + 0.1 * entropy.sum()).backward()
        grads = {n: q.grad.clone() for n, q in model.named_parameters() if q.grad is not None}
        results.append((logp.detach(), entropy.detach(), grads))
    (lp0, en0, g0), (lp1, en1, g1) = results
    torch.testing.assert_close(lp1, lp0, atol=ATOL, rtol=0)
    torch.testing.assert_close(en1, en0, atol=ATOL, rtol=0)
    assert g0.keys() == g1.keys() and (len(g0) > 0) == grad
    for name in g0:
        torch.testing.assert_close(g1[name], g0[name], atol=ATOL, rtol=1e-4)


def _update(model: Any, capture: bool, autocast: torch.dtype | None, steps: int = 2) -> list[tuple[Any, dict]]:
    """``steps`` updates (β > 0, μ = 2: the reference, π_old and policy passes) with an SGD step between them (a
    graph must read the stepped weights), the metrics and gradients of each."""
    from grpo_core.hardware.distributed import World
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.update.step import old_logprobs, policy_update, update_path

    ro = _rollout()
    adv = torch.linspace(-1.0, 1.0, 7)
    cfg = GRPOConfig(beta=0.04, num_iterations=2, entropy_coef=0.01, temperature=0.7, capture_update=capture,
                     micro_batch_size=7, max_tokens_per_micro_batch=40)  # fmt: skip
    path = update_path(model, cfg, World())
    assert path.packing and path.captured == capture and not path.graphs  # a CPU pads, replays nothing
    out = []
    params = [p for p in model.parameters() if p.requires_grad]
    for _ in range(steps):
        old = old_logprobs(model, ro, adv, cfg, autocast, World(), path)
        sums = policy_update(model, ro, adv, cfg, autocast, old, World(), path)
        out.append((sums, {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}))
        with torch.no_grad():
            for p in params:
                p -= 0.5 * p.grad.sign() * p.abs().mean()
                p.grad = None
    return out


@pytest.mark.parametrize("autocast", [None, torch.bfloat16])
def test_the_captured_update_is_the_eager_one(tiny_model_dir: Path, autocast: torch.dtype | None) -> None:
    """Whole updates through bucketed packs against the eager packed path: equal within the fp32 bounds, and in
    bf16 as close as the two eager paths' rounding allows; the second update after a step on the adapter."""
    runs = [_update(nontrivial_policy(tiny_model_dir), capture, autocast) for capture in (False, True)]
    tol = ATOL if autocast is None else 2e-2
    for (s0, g0), (s1, g1) in zip(*runs, strict=True):
        assert s1.loss == pytest.approx(s0.loss, abs=tol) and s1.kl_sum == pytest.approx(s0.kl_sum, abs=tol * 10)
        assert s1.updated_tokens == s0.updated_tokens
        assert g0.keys() == g1.keys() and len(g0) > 0
        for name, want in g0.items():
            if autocast is None:
                torch.testing.assert_close(g1[name], want, atol=ATOL, rtol=1e-4)
            else:
                cos = torch.nn.functional.cosine_similarity(g1[name].flatten(), want.flatten(), dim=0)
                assert cos > 0.99 or float(want.abs().max()) < 1e-6, (name, cos)


class _Trace(TorchDispatchMode):
    """Every op with its tensors' shapes and dtypes and its other arguments: what a graph records of a pass."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, tuple[Any, ...]]] = []

    @staticmethod
    def _sig(a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            return ("T", tuple(a.shape), a.dtype, a.device.type)
        if isinstance(a, list | tuple):
            return tuple(_Trace._sig(x) for x in a)
        return a if isinstance(a, int | float | bool | str | None | torch.dtype) else type(a).__name__

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append((str(func), self._sig((args, tuple(sorted((kwargs or {}).items()))))))
        return func(*args, **(kwargs or {}))


def _pass_trace(model: Any, packed: Any, grad: bool) -> list[tuple[str, tuple[Any, ...]]]:
    """The ops of what a graph records: the pass (``_token_logprobs``) and, with gradients, its backward from
    fixed-shape output gradients, as ``make_graphed_callables`` captures it."""
    from grpo_core.update.logprobs import _token_logprobs

    trace = _Trace()
    params = [p for p in model.parameters() if p.requires_grad]
    with trace, torch.set_grad_enabled(grad):
        logp, entropy = _token_logprobs(model, packed, temperature=0.7, entropy_grad=grad, fused_head=True)
        if grad:
            assert entropy is not None
            torch.autograd.grad((logp, entropy), params, (torch.ones_like(logp), torch.ones_like(entropy)))
    return trace.ops


def test_packs_of_one_bucket_launch_the_same_ops(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two different micro-batches (other rows, prompts and lengths) padded to one bucket run op for op the same
    calls, shapes and arguments, forward and backward, with gradients and without, as a capture runs them (the
    LoRA casts inside): one graph replays both."""
    from grpo_core.update import lora_fused

    monkeypatch.setattr(lora_fused, "_capturing", lambda t: True)
    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    first = pack(*batch, share_prefix=True)
    other_rows = [0, 2, 3, 4, 6]  # one prompt's rows, another length mix
    second = pack(*(t[other_rows] for t in batch), share_prefix=True)
    bucket = bucket_of(first)
    assert bucket_of(second) != bucket and second.input_ids.shape[1] < first.input_ids.shape[1]
    for grad in (True, False):
        traces = [_pass_trace(model, static_pack(p, bucket).to(torch.device("cpu")), grad) for p in (first, second)]
        assert len(traces[0]) > 100
        assert traces[0] == traces[1], [(a, b) for a, b in zip(*traces, strict=False) if a != b][:3]


def test_the_refusals_catch_what_a_capture_refuses() -> None:
    """The checker itself: a read of a device value, a host tensor copied in, a host tensor beside a device one."""
    x = torch.ones(3, device="meta")
    for bad in (
        lambda: bool((x > 0).any()),
        lambda: x + torch.tensor([1.0, 2.0, 3.0]).to("meta", non_blocking=True),
        lambda: x.index_select(0, torch.tensor([0, 1])),
    ):
        refusals = CaptureRefusals()
        with refusals, contextlib.suppress(Exception):
            bad()
        assert refusals.found, bad
    refusals = CaptureRefusals()
    with refusals:
        (x * 2).index_select(0, torch.arange(2, device="meta")).sum()
    assert refusals.found == []


@pytest.mark.parametrize("kind", ["padded", "varlen"])
def test_a_captured_pass_has_nothing_a_cuda_graph_cannot_capture(
    tiny_model_dir: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference pass, and the policy's forward and backward, of a bucketed pack with the model on ``meta``
    under bf16 LoRA (cast inside, as in a capture): not one op a capture refuses, with the kernel layout the CPU
    runs and the one CUDA runs."""
    from grpo_core.update import lora_fused
    from grpo_core.update.attention import varlen_layout
    from grpo_core.update.lora_fused import reference_pass

    monkeypatch.setattr(lora_fused, "_capturing", lambda t: True)
    model = nontrivial_policy(tiny_model_dir).to(dtype=torch.bfloat16).to("meta")
    for p in model.parameters():  # the adapter's fp32 masters, as load_policy keeps them
        if p.requires_grad:
            p.data = p.data.float()
    meta = torch.device("meta")
    static = static_pack(pack(*_batch(), share_prefix=True))
    moved = static.to(meta, torch.bfloat16)
    if kind == "varlen":
        b = static.bucket
        assert b is not None
        layout = varlen_layout(static.attention, b.tokens, meta, (b.queries, b.keys))
        moved = dataclasses.replace(moved, layout=layout)
    refusals = CaptureRefusals()
    with refusals, torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
        with torch.no_grad(), reference_pass(model):
            packed_token_logprobs(model, moved, temperature=0.7)
        logp, entropy = packed_token_logprobs(model, moved, temperature=0.7, entropy_grad=True)
        assert entropy is not None
        torch.autograd.backward((logp, entropy), (torch.ones_like(logp), torch.ones_like(entropy)))
    assert refusals.ops > 200 and refusals.found == [], refusals.found
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_the_graphs_need_cuda_whole_fused_adapters_and_no_checkpointing(tiny_model_dir: Path) -> None:
    from grpo_core.hardware.memory import enable_checkpointing

    model = nontrivial_policy(tiny_model_dir)
    assert "CUDA" in (capture_problem(model, torch.device("cpu")) or "")
    assert capture_problem(model, torch.device("cuda")) is None
    assert "fused" in (capture_problem(nontrivial_policy(tiny_model_dir, fused_lora=False), torch.device("cuda")) or "")
    enable_checkpointing(model)
    assert "checkpointing" in (capture_problem(model, torch.device("cuda")) or "")


def test_a_capture_that_fails_leaves_the_pass_eager_with_the_reason(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed capture (here: no CUDA to capture on) is kept as the reason, warned once, and the pass computes
    what it computes eagerly, now and after."""
    model = nontrivial_policy(tiny_model_dir)
    static = static_pack(pack(*_batch(), share_prefix=True)).to(torch.device("cpu"))
    with torch.no_grad():
        want, _ = packed_token_logprobs(model, static, temperature=0.7)
        with captured.captured_passes(model, True) as graphs:
            assert graphs is not None
            got = [packed_token_logprobs(model, static, temperature=0.7)[0] for _ in range(2)]
    assert graphs.failure is not None and graphs.captures == 0
    assert sum("capturing the update failed" in r.message for r in caplog.records) == 1
    for g in got:
        torch.testing.assert_close(g, want)
    assert captured.update_graphs(model) is None  # off outside the context


def test_lora_casts_inside_a_capture_are_fresh(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused LoRA layers cast A and s·B from their cache, except while a graph is captured: a replay would
    read the cast of the capture's weights."""
    from grpo_core.update import lora_fused
    from grpo_core.update.lora_fused import _compute_weights

    model = nontrivial_policy(tiny_model_dir)
    layer = next(m for m in model.modules() if hasattr(m, "_peft_forward"))
    name = next(iter(layer.lora_A))
    a0, _ = _compute_weights(layer, name, torch.bfloat16)
    assert _compute_weights(layer, name, torch.bfloat16)[0] is a0  # cached per weight version
    monkeypatch.setattr(lora_fused, "_capturing", lambda t: True)
    a1, _ = _compute_weights(layer, name, torch.bfloat16)
    assert a1 is not a0 and torch.equal(a1, a0)


def test_a_graphs_static_inputs_stand_in_for_a_packs_tensors() -> None:
    """What a graph reads of a pack (``_tensors``: its ids, positions, loss tokens and layout) and the pack rebuilt
    on other tensors (``_with_tensors``: the graph's static inputs), for both attention layouts."""
    from grpo_core.update.attention import varlen_layout

    static = static_pack(pack(*_batch(), share_prefix=True))
    moved = static.to(torch.device("cpu"))
    b = static.bucket
    assert b is not None
    varlen = dataclasses.replace(moved, layout=varlen_layout(static.attention, b.tokens, torch.device("cpu"),
                                                             (b.queries, b.keys)))  # fmt: skip
    for packed in (moved, varlen):
        tensors = captured._tensors(packed)
        copies = [t.clone() for t in tensors]
        rebuilt = captured._with_tensors(packed, copies)
        assert type(rebuilt.layout) is type(packed.layout) and rebuilt.bucket == packed.bucket
        assert all(x is y for x, y in zip(captured._tensors(rebuilt), copies, strict=True))
        assert rebuilt.layout is not None and packed.layout is not None
        layout = packed.layout
        ints = [f.name for f in dataclasses.fields(layout) if not isinstance(getattr(layout, f.name), torch.Tensor)]
        assert ints and all(getattr(rebuilt.layout, name) == getattr(layout, name) for name in ints)
