"""Packed micro-batches and the fused LM head compute what the padded path computes: log-probs, entropies and
LoRA gradients within 1e-5 in fp32, on rows of very different lengths, with and without shared prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.schemas.config import GRPOConfig
from grpo_core.update import packing
from grpo_core.update.attention import AttentionRow
from grpo_core.update.fused_head import head_logprobs
from grpo_core.update.logprobs import completion_logprobs
from grpo_core.update.packing import pack, packing_problem, span_lengths
from tests.training import nontrivial_policy

ATOL = 1e-5


def _batch() -> tuple[torch.Tensor, ...]:
    """Two prompts of different lengths (left-padded), three rows each, interleaved; completions of 1 to 23 tokens,
    one with a hole in its loss mask (a tool's tokens) and one with no loss token at all."""
    short, long = [0, 0, 5, 6, 7], [9, 3, 4, 8, 2]
    order = [0, 1, 1, 0, 0, 1, 0]
    prompt_ids = torch.tensor([[short, long][g] for g in order])
    prompt_mask = torch.tensor([[[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]][g] for g in order])
    g = torch.Generator().manual_seed(0)
    completion_ids = torch.randint(2, 40, (7, 23), generator=g)
    lengths = torch.tensor([23, 3, 9, 1, 17, 23, 0])
    completion_mask = (torch.arange(23).unsqueeze(0) < lengths.unsqueeze(1)).long()
    completion_mask[4, 5:9] = 0  # a tool's reply inside a multi-turn row: input, not loss
    return prompt_ids, prompt_mask, completion_ids, completion_mask


def _run(model: Any, batch: tuple[torch.Tensor, ...], **kw: Any) -> tuple[torch.Tensor, torch.Tensor, dict]:
    model.zero_grad(set_to_none=True)
    mask = batch[3].float()
    logp, entropy = completion_logprobs(model, *batch, temperature=0.7, entropy_grad=True, **kw)
    weights = torch.linspace(-1.0, 1.0, logp.numel()).view_as(logp)  # every token's gradient counts differently
    ((logp * mask * weights).sum() + 0.1 * (entropy * mask).sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return (logp * mask).detach(), (entropy * mask).detach(), grads


def _assert_same(a: tuple, b: tuple) -> None:
    (lp0, en0, g0), (lp1, en1, g1) = a, b
    assert lp0.shape == lp1.shape
    assert torch.allclose(lp0, lp1, atol=ATOL), (lp0 - lp1).abs().max()
    assert torch.allclose(en0, en1, atol=ATOL), (en0 - en1).abs().max()
    assert g0.keys() == g1.keys() and len(g0) > 0
    for name in g0:
        assert torch.allclose(g0[name], g1[name], rtol=1e-4, atol=ATOL), (name, (g0[name] - g1[name]).abs().max())
    assert any(float(g.abs().sum()) > 0 for g in g1.values())


def test_the_pack_has_no_padding_and_positions_restart_per_row() -> None:
    batch = _batch()
    shared = pack(*batch, share_prefix=True)
    spans = span_lengths(batch[3])
    assert spans.tolist() == [23, 3, 9, 1, 17, 23, 0]
    # two prompts of 3 and 5 tokens, once each, and every row's completion up to its last loss token
    assert shared.input_ids.shape[1] == 3 + 5 + int(spans.sum())
    assert shared.segments == 2
    # each prompt attends as one row, then each of its completions against [prompt | completion]
    assert [(r.q_len, r.p_len) for r in shared.attention][:5] == [(3, 0), (23, 3), (1, 3), (17, 3), (5, 0)]
    assert shared.position_ids[0, :3].tolist() == [0, 1, 2]
    assert shared.position_ids[0, 3:6].tolist() == [3, 4, 5]  # row 0's completion follows its prompt
    assert len(shared.targets) == int(batch[3].sum())
    single = pack(*batch, share_prefix=False)
    assert single.input_ids.shape[1] == 3 * 4 + 5 * 3 - 3 + int(spans.sum())  # row 6 (no loss token) left out
    assert single.segments == 6 and all(r.p_len == 0 for r in single.attention)


@pytest.mark.parametrize("share_prefix", [True, False])
def test_packed_equals_padded(tiny_model_dir: Path, share_prefix: bool) -> None:
    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    want = _run(model, batch, share_prefix=False)
    _assert_same(want, _run(model, batch, share_prefix=share_prefix, packing=True))


@pytest.mark.parametrize("share_prefix", [True, False])
def test_the_packed_attention_computes_the_padded_path(tiny_model_dir: Path, share_prefix: bool) -> None:
    """The packed attention's padded kernel (what every device but a GPU runs; the GPU's varlen kernel is checked
    against it in tests/gpu/test_gpu_update.py): the same numbers as [prompt | completion] rows through
    transformers' own attention, and row by row against SDPA by hand."""
    from grpo_core.update.attention import padded_attention, padded_layout

    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    want = _run(model, batch, share_prefix=False)
    packed = pack(*batch, share_prefix=share_prefix)
    layout = packed.to(torch.device("cpu")).layout
    assert isinstance(layout, packing.PaddedLayout) and layout.rows == len(packed.attention)
    _assert_same(want, _run(model, batch, share_prefix=share_prefix, packing=True))
    # the kernel alone, grouped heads: a row attends its prompt and itself up to each query, nothing else
    q, k, v = torch.randn(14, 4, 8), torch.randn(14, 2, 8), torch.randn(14, 2, 8)
    rows = (AttentionRow(0, 5), AttentionRow(5, 3), AttentionRow(8, 4, 5, 3), AttentionRow(12, 2, 5, 3))
    got = padded_attention(q, k, v, padded_layout(rows, 14, torch.device("cpu")), None)
    for r in rows:
        keys = [*range(r.p_start, r.p_start + r.p_len), *range(r.q_start, r.q_start + r.q_len)]
        kk, vv = k[keys].repeat_interleave(2, 1), v[keys].repeat_interleave(2, 1)
        qq = q[r.q_start : r.q_start + r.q_len]
        ref = torch.nn.functional.scaled_dot_product_attention(
            qq.transpose(0, 1), kk.transpose(0, 1), vv.transpose(0, 1),
            attn_mask=torch.ones(r.q_len, len(keys), dtype=torch.bool).tril(len(keys) - r.q_len),
        ).transpose(0, 1)  # fmt: skip
        torch.testing.assert_close(got[r.q_start : r.q_start + r.q_len], ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("packed", [True, False])
def test_fused_head_equals_the_plain_head(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, packed: bool) -> None:
    """The head in chunks of 5 rows (recomputed in the backward) against the model's own logits."""
    import grpo_core.update.fused_head as fused

    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    want = _run(model, batch, share_prefix=True)
    monkeypatch.setattr(fused, "CHUNK_ELEMENTS", 5 * fused.vocab_size(model.get_output_embeddings()))
    _assert_same(want, _run(model, batch, share_prefix=True, packing=packed, fused_head=True))


# peft warns that an adapter on a tied head complicates merging; this test trains it and merges nothing
@pytest.mark.filterwarnings("ignore:Model has `tie_word_embeddings=True`")
def test_lora_on_the_lm_head_still_trains(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import grpo_core.update.fused_head as fused

    targets = ["q_proj", "v_proj", "lm_head"]
    model = nontrivial_policy(tiny_model_dir, target_modules=targets)
    batch = _batch()
    want = _run(model, batch, share_prefix=False)
    assert any("lm_head" in n and "lora_B" in n for n in want[2])
    monkeypatch.setattr(fused, "CHUNK_ELEMENTS", 4 * fused.vocab_size(model.get_output_embeddings()))
    got = _run(model, batch, share_prefix=True, packing=True, fused_head=True)
    _assert_same(want, got)
    assert all(float(g.abs().sum()) > 0 for n, g in got[2].items() if "lm_head" in n)


def test_reference_pass_packed_is_the_base_model(tiny_model_dir: Path) -> None:
    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    mask = batch[3].bool()
    with torch.no_grad(), model.disable_adapter():
        plain = completion_logprobs(model, *batch, temperature=1.0, share_prefix=False)
        packed = completion_logprobs(model, *batch, temperature=1.0, packing=True, fused_head=True)
    assert torch.allclose(plain[mask], packed[mask], atol=ATOL)


def test_fused_head_chunks_give_one_chunks_numbers() -> None:
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 50, bias=False)
    hidden = torch.randn(23, 16, requires_grad=True)
    targets = torch.randint(0, 50, (23,))
    outs = []
    for rows in (0, 4):
        hidden.grad = None
        head.zero_grad()
        head.weight.requires_grad_(True)
        logp, ent = head_logprobs(hidden, head, targets, temperature=0.9, entropy_grad=True, chunk_rows=rows)
        assert ent is not None
        (logp.sum() * 0.3 + (ent * torch.arange(23.0)).sum()).backward()
        outs.append((logp.detach(), ent.detach(), hidden.grad.clone(), head.weight.grad.clone()))
    for a, b in zip(*outs, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_models_that_cannot_pack_say_why(tiny_model_dir: Path) -> None:
    model = nontrivial_policy(tiny_model_dir)
    assert packing_problem(model) is None
    model.config.layer_types = ["sliding_attention"] * model.config.num_hidden_layers
    try:
        assert "sliding" in (packing_problem(model) or "")
    finally:
        model.config.layer_types = ["full_attention"] * model.config.num_hidden_layers


def test_compiled_layers_compute_the_eager_update(tiny_model_dir: Path) -> None:
    """``compile_update`` under gradient checkpointing: the eager gradient through compiled decoder layers; new
    pack layouts and lengths add no graph (the packed attention is never traced, shapes are dynamic); the eager
    model is back outside the update."""
    from grpo_core.hardware.memory import enable_checkpointing
    from grpo_core.update.step import UpdatePath, policy_update

    model = nontrivial_policy(tiny_model_dir)
    enable_checkpointing(model)
    ro = _rollout()
    adv = torch.linspace(-1.0, 1.0, 7)
    cfg = GRPOConfig(beta=0.04, micro_batch_size=4, max_tokens_per_micro_batch=40, gradient_checkpointing=True)
    grads = []
    for compiled in (False, True):
        policy_update(model, ro, adv, cfg, None, path=UpdatePath(packing=True, fused_head=True, compiled=compiled))
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        model.zero_grad(set_to_none=True)
    for name, want in grads[0].items():
        assert torch.allclose(want, grads[1][name], rtol=1e-4, atol=ATOL), name
    stats = torch._dynamo.utils.counters["stats"]
    graphs = stats["unique_graphs"]
    assert graphs >= 1  # compiled, not silently eager
    for k in range(2, 7):  # other rows, other layouts and lengths
        rows = torch.arange(k)
        sub = ro.select(rows)
        policy_update(model, sub, adv[rows], cfg, None, path=UpdatePath(packing=True, fused_head=True, compiled=True))
        model.zero_grad(set_to_none=True)
    assert stats["unique_graphs"] == graphs
    assert "forward" not in vars(model.get_base_model().model.layers[0])


def _rollout() -> Any:
    from grpo_core.rollout.batch import Rollout

    prompt_ids, prompt_mask, completion_ids, completion_mask = _batch()
    n = len(prompt_ids)
    return Rollout(prompt_ids, prompt_mask, completion_ids, completion_mask, torch.zeros(n, dtype=torch.bool), [""] * n)


@pytest.mark.parametrize("world_size", [1, 2])
def test_token_budget_plan_covers_every_row_once_within_the_budget(world_size: int) -> None:
    from grpo_core.hardware.distributed import World
    from grpo_core.update.step import UpdatePath, plan_micro_batches

    ro = _rollout()
    adv = torch.linspace(-1.0, 1.0, 7)
    cfg = GRPOConfig(beta=0.04, micro_batch_size=2, max_tokens_per_micro_batch=30)
    path = UpdatePath(packing=True, fused_head=True)
    plans = [plan_micro_batches(ro, adv, cfg, World(rank=r, size=world_size), path)[0] for r in range(world_size)]
    batches = [b for plan in plans for b in plan]
    rows = sorted(int(i) for b in batches for i in b)
    assert rows == [0, 1, 2, 3, 4, 5]  # row 6 has no loss token
    for b in batches:
        packed = pack(
            *(t[b] for t in (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)), share_prefix=True
        )
        assert packed.input_ids.shape[1] <= 30 or len(b) == 1, (b, packed.input_ids.shape)


@pytest.mark.parametrize("checkpointed", [False, True])
def test_the_update_is_the_full_batch_one_whatever_the_packing(tiny_model_dir: Path, checkpointed: bool) -> None:
    """β > 0 and μ = 2 (π_old from its own pass): the padded path in one micro-batch against packed micro-batches
    of at most 30 tokens, in fp32; with gradient checkpointing too (the packed path still shares the prompt)."""
    from grpo_core.hardware.distributed import World
    from grpo_core.hardware.memory import enable_checkpointing
    from grpo_core.update.step import UpdatePath, old_logprobs, policy_update

    model = nontrivial_policy(tiny_model_dir)
    if checkpointed:
        enable_checkpointing(model)
    ro = _rollout()
    adv = torch.linspace(-1.0, 1.0, 7)
    base = {"beta": 0.04, "num_iterations": 2, "entropy_coef": 0.01, "temperature": 0.7}
    base["gradient_checkpointing"] = checkpointed
    runs = []
    for path, cfg in (
        (UpdatePath(), GRPOConfig(**base, micro_batch_size=7)),
        (
            UpdatePath(packing=True, fused_head=True),
            GRPOConfig(**base, micro_batch_size=7, max_tokens_per_micro_batch=30),
        ),
    ):
        old = old_logprobs(model, ro, adv, cfg, None, World(), path)
        sums = policy_update(model, ro, adv, cfg, None, old, World(), path)
        runs.append(
            (
                old * ro.completion_mask,
                sums,
                {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
            )
        )
        model.zero_grad(set_to_none=True)
    (old0, s0, g0), (old1, s1, g1) = runs
    assert torch.allclose(old0, old1, atol=ATOL)
    assert abs(s0.loss - s1.loss) < 1e-6 and abs(s0.kl_sum - s1.kl_sum) < 1e-5
    assert s0.updated_tokens == s1.updated_tokens
    for name, want in g0.items():
        assert torch.allclose(want, g1[name], rtol=1e-4, atol=ATOL), name


def test_auto_token_budget_is_the_padded_plans_memory() -> None:
    cfg = GRPOConfig(micro_batch_size=4, max_prompt_tokens=100, max_completion_tokens=28)
    assert cfg.micro_batch_tokens == 4 * 128
    assert GRPOConfig(micro_batch_size=4, max_tokens_per_micro_batch=300).micro_batch_tokens == 300


def test_in_bf16_packing_is_as_close_to_fp32_as_the_padded_path(tiny_model_dir: Path) -> None:
    """The stated bf16 bound: under bf16 autocast the packed path's log-probs and gradients are no further from the
    fp32 reference than twice the padded path's own bf16 error (each rounds its matmuls in other shapes)."""
    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    want = _run(model, batch, share_prefix=False)
    errors = {}
    for name, kw in (("padded", {}), ("packed", {"packing": True, "fused_head": True})):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = _run(model, batch, share_prefix=True, **kw)
        errors[name] = (
            float((got[0] - want[0]).abs().max()),
            max(float((got[2][n] - want[2][n]).abs().max()) for n in want[2]),
        )
    assert errors["padded"][0] > 0  # bf16 did round
    assert errors["packed"][0] <= 2 * errors["padded"][0] + 1e-3, errors
    assert errors["packed"][1] <= 2 * errors["padded"][1] + 1e-3, errors
