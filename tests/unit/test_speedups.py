"""The training core's speed-ups change no numbers: each one against the plain computation it replaces."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from grpo_core.models.prefix_cache import shared_prefixes
from grpo_core.policy import load_policy
from grpo_core.rollout.engines.base import Sampling
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.logprobs import completion_logprobs
from tests.training import nontrivial_policy


def _batch() -> tuple[torch.Tensor, ...]:
    """Two prompts of different lengths (left-padded), three rows each, interleaved; ragged completions."""
    short, long = [0, 0, 5, 6, 7], [9, 3, 4, 8, 2]
    order = [0, 1, 1, 0, 0, 1]
    prompt_ids = torch.tensor([[short, long][g] for g in order])
    prompt_mask = torch.tensor([[[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]][g] for g in order])
    g = torch.Generator().manual_seed(0)
    completion_ids = torch.randint(2, 40, (6, 7), generator=g)
    lengths = torch.tensor([7, 3, 5, 1, 6, 7])
    completion_mask = (torch.arange(7).unsqueeze(0) < lengths.unsqueeze(1)).long()
    return prompt_ids, prompt_mask, completion_ids, completion_mask


def test_rows_are_grouped_by_prompt_whatever_their_order() -> None:
    prompt_ids, prompt_mask, _, _ = _batch()
    first, inverse = shared_prefixes(prompt_ids, prompt_mask)
    assert len(first) == 2
    assert torch.equal(prompt_ids[first][inverse], prompt_ids)
    assert inverse[0] == inverse[3] == inverse[4] and inverse[1] == inverse[2] == inverse[5] != inverse[0]
    # same ids, different padding: not the same prompt
    assert shared_prefixes(torch.tensor([[0, 5], [0, 5]]), torch.tensor([[0, 1], [1, 1]])) is None
    assert shared_prefixes(prompt_ids[:2], prompt_mask[:2]) is None  # all distinct: nothing to share


def test_shared_prefix_gives_the_same_logprobs_and_gradients(tiny_model_dir: Path) -> None:
    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    mask = batch[3].float()
    results = []
    for share in (False, True):
        model.zero_grad(set_to_none=True)
        logp, entropy = completion_logprobs(model, *batch, temperature=0.7, entropy_grad=True, share_prefix=share)
        ((logp * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        results.append((logp.detach(), entropy.detach(), grads))
    (lp0, en0, g0), (lp1, en1, g1) = results
    assert torch.allclose(lp0 * mask, lp1 * mask, atol=2e-5)
    assert torch.allclose(en0 * mask, en1 * mask, atol=2e-5)
    assert g0.keys() == g1.keys() and len(g0) > 0
    for name in g0:  # prompt-side LoRA weights get their gradient through the one shared prefix
        assert torch.allclose(g0[name], g1[name], rtol=1e-4, atol=1e-6), name
    assert any(float(g.abs().sum()) > 0 for g in g1.values())


def test_shared_prefix_reference_pass_is_the_base_model(tiny_model_dir: Path) -> None:
    model = nontrivial_policy(tiny_model_dir)
    batch = _batch()
    mask = batch[3].bool()
    with torch.no_grad(), model.disable_adapter():
        plain = completion_logprobs(model, *batch, temperature=1.0, share_prefix=False)
        shared = completion_logprobs(model, *batch, temperature=1.0, share_prefix=True)
    with torch.no_grad():
        policy = completion_logprobs(model, *batch, temperature=1.0, share_prefix=True)
    assert torch.allclose(plain[mask], shared[mask], atol=2e-5)
    assert not torch.allclose(policy[mask], shared[mask], atol=1e-3)


def _tokenizer(tiny_model_dir: Path) -> object:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_inverse_cdf_draws_follow_the_distribution() -> None:
    from grpo_core.rollout.engines.decode import _draw
    from grpo_core.rollout.engines.noise import row_uniforms

    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    logp = probs.log().expand(20_000, 5).contiguous()
    tokens = _draw(logp, row_uniforms(0, torch.arange(20_000), 0))
    freq = torch.bincount(tokens, minlength=5).float() / len(tokens)
    assert torch.allclose(freq, probs, atol=0.012), freq  # ~3.5 standard errors at n = 20k
    assert int(freq[4] * len(tokens)) == 0  # a zero-probability token is never drawn


def test_merged_sampler_logprobs_are_the_trainers(tiny_model_dir: Path) -> None:
    """fp32 merged weights: the sampler's record of each token's log-prob is the trainer's, to float rounding;
    after an update and a sync it follows the new weights."""
    from grpo_core.rollout.engines.merged import MergedEngine

    model = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    engine = MergedEngine(model, tok, torch.float32)
    embed = model.get_base_model().get_input_embeddings().weight
    assert engine.model.get_input_embeddings().weight.data_ptr() == embed.data_ptr()  # shared, not copied
    kw = Sampling(group_size=4, max_new_tokens=12, temperature=0.7, top_p=1.0, seed=3)
    for round_ in range(2):
        ro = engine.generate(["1+2=", "13+4="], kw)
        with torch.no_grad():
            want = completion_logprobs(
                model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, temperature=0.7
            )
        m = ro.completion_mask.bool()
        assert m.sum() > 10
        assert torch.allclose(ro.sampling_logp[m], want[m], atol=1e-5), round_
        assert torch.equal(ro.sampling_logp[~m], torch.zeros_like(ro.sampling_logp[~m]))
        with torch.no_grad():  # an "optimizer step" the sampler has not seen until sync
            for name, p in model.named_parameters():
                if "lora_A" in name:
                    p.add_(0.3)
        engine.sync(model, round_ + 1)


def test_greedy_decode_matches_generate(tiny_model_dir: Path) -> None:
    from grpo_core.rollout.engines.hf import sample
    from grpo_core.rollout.engines.merged import MergedEngine

    model = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    kw = Sampling(group_size=2, max_new_tokens=10, temperature=0.0, top_p=1.0, seed=0)
    prompts = ["7+8=", "2*3+11="]  # different lengths: left padding
    ours = MergedEngine(model, tok, torch.float32).generate(prompts, kw)
    ref = sample(model, tok, prompts, kw, share_prefill=False)
    assert ours.sampling_logp is None
    width = min(ours.completion_ids.shape[1], ref.completion_ids.shape[1])
    assert torch.equal(ours.completion_mask[:, :width], ref.completion_mask[:, :width])
    content = [(r.completion_ids * r.completion_mask)[:, :width] for r in (ours, ref)]
    assert torch.equal(*content)
    assert ours.texts == ref.texts


def test_top_p_logprobs_are_the_renormalised_nucleus(tiny_model_dir: Path) -> None:
    from grpo_core.rollout.engines.merged import MergedEngine

    model = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    engine = MergedEngine(model, tok, torch.float32)
    kw = Sampling(group_size=4, max_new_tokens=8, temperature=1.0, top_p=0.5, seed=1)
    ro = engine.generate(["5+5="], kw)
    with torch.no_grad():
        full = completion_logprobs(
            model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, temperature=1.0
        )
    m = ro.completion_mask.bool()
    # within the nucleus p / mass(nucleus) >= p; equality only where the nucleus is one token (log-prob 0)
    assert bool((ro.sampling_logp[m] >= full[m] - 1e-5).all())
    tiny = engine.generate(["5+5="], replace(kw, top_p=1e-6))  # a nucleus of one token: greedy, probability 1
    greedy = engine.generate(["5+5="], replace(kw, top_p=1.0, temperature=0.0))
    assert torch.allclose(tiny.sampling_logp, torch.zeros_like(tiny.sampling_logp))
    assert tiny.texts == greedy.texts


def test_bf16_logprobs_stay_within_the_documented_bound(tiny_model_dir: Path) -> None:
    """precision="bf16" (bf16 base weights, autocast) against fp32 on the tiny model; docs/concepts/grpo.md quotes the
    bound."""
    from grpo_core.rollout.engines.merged import MergedEngine

    batch = _batch()
    mask = batch[3].bool()
    logps = {}
    for precision in ("fp32", "bf16"):
        model, tok = load_policy(tiny_model_dir, GRPOConfig(precision=precision), seed=0)
        dtype = torch.bfloat16 if precision == "bf16" else None
        with torch.no_grad(), torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            logps[precision] = completion_logprobs(model, *batch, temperature=1.0)
        if precision == "bf16":
            assert next(model.get_base_model().parameters()).dtype == torch.bfloat16
            assert all(p.dtype == torch.float32 for p in model.parameters() if p.requires_grad)
            ro = MergedEngine(model, tok, torch.bfloat16).generate(["1+2="], Sampling(4, 8, 1.0, 1.0, 0))
            assert ro.sampling_logp is not None and bool(torch.isfinite(ro.sampling_logp).all())
    diff = (logps["bf16"] - logps["fp32"])[mask].abs()
    assert float(diff.max()) < BF16_LOGP_BOUND, float(diff.max())


# Largest |log π_bf16 − log π_fp32| per token on the tiny model (measured 0.0011; docs/concepts/grpo.md, "Precision").
BF16_LOGP_BOUND = 0.005


def test_fused_lora_layers_match_peft_in_value_and_gradient(tiny_model_dir: Path) -> None:
    """grpo_core.update.lora_fused against peft's own forward: log-probs, entropy and every adapter gradient; fp32 to
    rounding, bf16 autocast within bf16 rounding; the reference pass (adapter disabled) is untouched."""
    from grpo_core.update.lora_fused import fuse_lora

    batch = _batch()
    mask = batch[3].float()
    for dtype, atol, rtol in ((None, 1e-5, 1e-4), (torch.bfloat16, 3e-2, 5e-2)):
        results = []
        for fused in (False, True):
            model = nontrivial_policy(tiny_model_dir, fused_lora=False)
            if fused:
                assert fuse_lora(model) == 7 * 2  # q k v o gate up down, 2 layers
            with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
                logp, entropy = completion_logprobs(model, *batch, temperature=0.7, entropy_grad=True)
                with torch.no_grad(), model.disable_adapter():
                    ref = completion_logprobs(model, *batch, temperature=0.7)
            ((logp * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
            grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
            assert all(g.dtype == torch.float32 for g in grads.values())
            results.append((logp.detach(), ref, grads))
        (lp0, ref0, g0), (lp1, ref1, g1) = results
        assert torch.equal(ref0, ref1)
        assert torch.allclose(lp0 * mask, lp1 * mask, atol=atol)
        for name in g0:
            if dtype is None:
                assert torch.allclose(g0[name], g1[name], rtol=rtol, atol=atol * 0.1), name
            else:  # bf16 keeps ~3 significant digits per element: compare whole tensors
                assert float((g0[name] - g1[name]).norm() / g0[name].norm()) < rtol, name


def test_token_logprob_backward_is_the_autograd_one() -> None:
    from grpo_core.update.token_logprob import TokenLogProb

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=g, dtype=torch.float64, requires_grad=True)
    index = torch.randint(0, 11, (3, 5), generator=g)
    weights = torch.randn(3, 5, generator=g)
    want = torch.autograd.grad(
        (torch.log_softmax(logits.float(), -1).gather(-1, index[..., None])[..., 0] * weights).sum(), logits
    )[0]
    got = torch.autograd.grad((TokenLogProb.apply(logits, index) * weights).sum(), logits)[0]
    assert torch.allclose(got, want.double(), atol=1e-6)
    half = logits.detach().bfloat16().requires_grad_()  # bf16 logits get a bf16 gradient, computed in fp32
    (TokenLogProb.apply(half, index) * weights).sum().backward()
    assert half.grad.dtype == torch.bfloat16 and torch.allclose(half.grad.double(), want.double(), atol=1e-2)


def test_prepacked_bf16_sampler_computes_what_plain_bf16_linears_do(tiny_model_dir: Path) -> None:
    import grpo_core.rollout.engines.merged as merged

    if not merged.can_prepack(torch.bfloat16, torch.device("cpu")):
        pytest.skip(
            "no oneDNN prepacked bf16 linear here (a torch build without it, or a CPU without AVX512/AVX-NE-CONVERT)"
        )
    model = nontrivial_policy(tiny_model_dir)
    packed = merged.MergedEngine(model, _tokenizer(tiny_model_dir), torch.bfloat16)
    plain = merged.MergedEngine(model, _tokenizer(tiny_model_dir), torch.bfloat16, prepack=False)
    assert packed.prepacked and not plain.prepacked
    assert sum(isinstance(m, merged.PrepackedLinear) for m in packed.model.modules()) == 14
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        a, b = packed.model(input_ids=ids).logits, plain.model(input_ids=ids).logits
    assert torch.allclose(a.float(), b.float(), atol=1e-2)
    with torch.no_grad():  # a sync after an update reaches the packed weights too
        for name, p in model.named_parameters():
            if "lora_A" in name:
                p.add_(0.5)
    packed.sync(model, 1)
    plain.sync(model, 1)
    with torch.no_grad():
        a2, b2 = packed.model(input_ids=ids).logits, plain.model(input_ids=ids).logits
    assert torch.allclose(a2.float(), b2.float(), atol=1e-2) and not torch.allclose(a2, a, atol=1e-2)
