"""The merged sampler's decode steps on static buffers (grpo_core.rollout.engines.graphs), checked on a CPU with the
CUDA graphs off: the same buffers, buckets, columns and masks a GPU replays, run eagerly. tests/gpu compares the
replayed graphs with these eager steps on CUDA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.decode import decode, decode_continuations
from grpo_core.rollout.engines.graphs import (
    CAPACITY_STEP,
    StaticDecoder,
    batch_bucket,
    capacity_bucket,
    unsupported_reason,
)
from grpo_core.update.logprobs import completion_logprobs
from tests.capture_checks import CaptureRefusals
from tests.training import nontrivial_policy

PROMPTS = ["1+2=", "13+4=", "7"]  # three lengths: left padding, and 3 × G rows that fill no bucket exactly


def _tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def _pair(model: Any, tok: Any, prompts: list[str], kw: Sampling, static: StaticDecoder) -> tuple[Any, Any]:
    eager = decode(model, tok, prompts, kw, stop_ids=[0])
    return eager, decode(model, tok, prompts, kw, stop_ids=[0], static=static)


def test_buckets_bound_the_padding_and_the_recaptures() -> None:
    assert [batch_bucket(n) for n in (1, 2, 3, 5, 8, 9, 16, 17, 100, 256, 257, 300)] == [
        1, 2, 4, 8, 8, 16, 16, 32, 112, 256, 320, 320,
    ]  # fmt: skip
    assert all(batch_bucket(n) - n < max(16, n // 4) for n in range(1, 2000))
    assert capacity_bucket(1) == capacity_bucket(CAPACITY_STEP) == CAPACITY_STEP
    assert capacity_bucket(CAPACITY_STEP + 1) == 2 * CAPACITY_STEP
    with pytest.raises(ValueError, match="at least one row"):
        batch_bucket(0)


@pytest.mark.parametrize(
    "kw",
    [
        Sampling(group_size=3, max_new_tokens=12, temperature=0.7, top_p=1.0, seed=3),
        Sampling(group_size=3, max_new_tokens=20, temperature=1.0, top_p=0.9, seed=5),
        Sampling(group_size=2, max_new_tokens=10, temperature=0.0, top_p=1.0, seed=0),
    ],
    ids=["sampled", "nucleus", "greedy"],
)
def test_static_steps_sample_what_the_eager_loop_samples(tiny_model_dir: Path, kw: Sampling) -> None:
    """fp32: the same tokens, log-probs to rounding (attention over the whole capacity, masked, sums in another
    order), and those log-probs are the trainer's as the eager loop's are."""
    model = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    static = StaticDecoder(model, graphs=False)
    eager, ours = _pair(model, tok, PROMPTS, kw, static)
    assert torch.equal(eager.completion_ids, ours.completion_ids)
    assert torch.equal(eager.completion_mask, ours.completion_mask) and eager.texts == ours.texts
    assert torch.equal(eager.prompt_ids, ours.prompt_ids) and torch.equal(eager.prompt_mask, ours.prompt_mask)
    if kw.temperature == 0:
        assert ours.sampling_logp is None
        return
    assert ours.sampling_logp is not None and eager.sampling_logp is not None
    assert torch.allclose(ours.sampling_logp, eager.sampling_logp, atol=1e-5)
    if kw.top_p == 1.0:
        with torch.no_grad():
            want = completion_logprobs(
                model, ours.prompt_ids, ours.prompt_mask, ours.completion_ids, ours.completion_mask, temperature=0.7
            )
        m = ours.completion_mask.bool()
        assert m.sum() > 20
        assert torch.allclose(ours.sampling_logp[m], want[m], atol=1e-5)


class _ScriptedSteps:
    """Greedy logits that make row r emit EOS (id 0) from token ``stops[r]`` on, token 5 before."""

    def __init__(self, stops: list[int], check_every: int) -> None:
        self.stops, self.check_every, self.t = torch.tensor(stops), check_every, 0

    def logits(self) -> torch.Tensor:
        out = torch.zeros(len(self.stops), 8)
        out[:, 5] = 1.0
        out[self.stops <= self.t, 0] = 2.0
        return out

    def feed(self, tokens: torch.Tensor) -> None:
        self.t += 1


def test_rows_that_all_finish_early_end_the_rollout_where_a_check_per_token_would() -> None:
    """Static steps check for finished rows every 8 tokens; the steps run past the last row's EOS are cut off."""
    from grpo_core.rollout.engines.decode import _sample_tokens

    kw = Sampling(group_size=1, max_new_tokens=40, temperature=0.0, top_p=1.0, seed=0)
    rows = torch.arange(3)
    for stops in ([2, 12, 5], [0, 0, 0], [7, 3, 15], [39, 1, 2], [45, 1, 2]):
        per_token, _ = _sample_tokens(_ScriptedSteps(stops, 1), rows, kw, [0])
        every_8, _ = _sample_tokens(_ScriptedSteps(stops, 8), rows, kw, [0])
        assert per_token.shape[1] == min(max(stops) + 1, 40), stops
        assert torch.equal(per_token, every_8), stops


def test_buffers_are_allocated_once_and_grow_only_when_a_rollout_needs_more(tiny_model_dir: Path) -> None:
    model = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    static = StaticDecoder(model, graphs=False)
    kw = Sampling(group_size=4, max_new_tokens=8, temperature=1.0, top_p=1.0, seed=0)
    for seed in range(3):  # steps of one job: one allocation
        decode(model, tok, PROMPTS, Sampling(4, 8, 1.0, 1.0, seed), static=static)
    assert (static.allocations, static.rows, static.capacity) == (1, 16, CAPACITY_STEP)
    k = static.k[0]
    small = decode(model, tok, PROMPTS[:1], kw, static=static)  # a smaller bucket: the same buffers' first rows
    assert static.allocations == 1 and static.k[0] is k
    assert torch.equal(small.completion_ids, decode(model, tok, PROMPTS[:1], kw).completion_ids)
    decode(model, tok, PROMPTS * 2, kw, static=static)  # 24 rows: more than the buffers hold
    assert (static.allocations, static.rows) == (2, 32)
    long = Sampling(4, CAPACITY_STEP, 1.0, 1.0, 0)  # prompt + completion beyond the capacity
    decode(model, tok, PROMPTS, long, static=static)
    assert (static.allocations, static.rows, static.capacity) == (3, 32, 2 * CAPACITY_STEP)
    static.reserve(8, 100)  # already held: nothing new
    assert static.allocations == 3


def test_merged_engine_follows_each_sync_on_static_buffers(tiny_model_dir: Path) -> None:
    """``sync`` writes the merged weights in place, where a captured graph reads them: the next rollout samples the
    updated policy without a new allocation (or, on a GPU, a new capture)."""
    from grpo_core.rollout.engines.merged import MergedEngine

    model = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    engine = MergedEngine(model, tok, torch.float32, decode_mode="static")
    assert engine.static is not None
    engine.reserve(12, 40)
    kw = Sampling(group_size=4, max_new_tokens=12, temperature=0.7, top_p=1.0, seed=3)
    for round_ in range(2):
        ro = engine.generate(PROMPTS, kw)
        with torch.no_grad():
            want = completion_logprobs(
                model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, temperature=0.7
            )
        m = ro.completion_mask.bool()
        assert ro.sampling_logp is not None and torch.allclose(ro.sampling_logp[m], want[m], atol=1e-5), round_
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_A" in name:
                    p.add_(0.3)
        engine.sync(model, round_ + 1)
    assert engine.static.allocations == 1


def test_continuations_on_static_buffers_are_the_eager_ones(tiny_model_dir: Path) -> None:
    model = nontrivial_policy(tiny_model_dir)
    sequences = [[5, 6, 7, 8, 9], [3, 4], [10, 11, 12]]
    kw = Sampling(group_size=1, max_new_tokens=10, temperature=1.0, top_p=1.0, seed=7)
    args = (model, sequences, kw, [4, 9, 2])
    eager = decode_continuations(*args, stop_ids=[0], pad_id=0)
    ours = decode_continuations(*args, stop_ids=[0], pad_id=0, static=StaticDecoder(model, graphs=False))
    assert [t for t, _ in eager] == [t for t, _ in ours]
    for (_, a), (_, b) in zip(eager, ours, strict=True):
        assert a is not None and b is not None
        assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5)


def _tiny(kind: str) -> Any:
    """A tiny random model of each architecture family the GPU runs: Llama (SmolLM2, Llama 3), Qwen2 (q/k/v bias),
    Qwen3 (q/k norms, head_dim set apart from the hidden size)."""
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

    common = {"vocab_size": 64, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
    heads = {"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512}
    config = {
        "llama": LlamaConfig(**common, **heads),
        "qwen2": Qwen2Config(**common, **heads),
        "qwen3": Qwen3Config(**common, **heads, head_dim=32),
    }[kind]
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.eval()
    return model


@pytest.mark.parametrize("kind", ["llama", "qwen2", "qwen3"])
def test_a_decode_step_has_nothing_a_cuda_graph_cannot_capture(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step a graph records, for each architecture: no host synchronisation and no tensor from Python data
    (the whole of what a capture refuses, seen on a CPU), grouped key/value heads never expanded over the cache,
    and logits equal to transformers' own forward of the same tokens."""
    import transformers.integrations.sdpa_attention as sdpa

    from grpo_core.rollout.engines.decode import _prefill

    model = _tiny(kind)
    assert model.config.num_key_value_heads < model.config.num_attention_heads  # grouped
    assert unsupported_reason(model) is None
    static = StaticDecoder(model, graphs=False)
    ids = torch.tensor([[0, 0, 5, 6, 7, 8], [9, 3, 4, 8, 2, 1], [0, 11, 12, 13, 14, 15]])
    mask = (torch.arange(6) >= torch.tensor([[2], [0], [1]])).long()
    with torch.inference_mode():
        run = static.start(_prefill(model, ids, mask, 1, capacity=6), ids, mask, max_new_tokens=4)
        recorder = CaptureRefusals()
        expanded = sdpa.repeat_kv
        monkeypatch.setattr(sdpa, "repeat_kv", lambda *a: pytest.fail("the decode step copied the cache per head"))
        with recorder:
            step = static._step_fn(run.bucket)
            logits = step()[:3]
        monkeypatch.setattr(sdpa, "repeat_kv", expanded)
        assert model.config._attn_implementation == "sdpa"  # switched for the step only
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        want = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1].float()
    assert recorder.ops > 50 and recorder.found == [], recorder.found
    torch.testing.assert_close(logits, want, atol=1e-5, rtol=1e-5)


def test_what_static_buffers_cannot_hold_is_refused_with_the_reason(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, Qwen2Config

    from grpo_core.rollout.engines.merged import MergedEngine

    sliding = Qwen2Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, use_sliding_window=True, sliding_window=16, max_window_layers=0,
    )  # fmt: skip
    sliding._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(sliding)
    assert "DynamicSlidingWindowLayer" in str(unsupported_reason(model))
    with pytest.raises(ValueError, match="not available for this model: its cache has DynamicSlidingWindowLayer"):
        StaticDecoder(model, graphs=False)
    model.config._attn_implementation = "eager"
    assert unsupported_reason(model) == "it attends with 'eager', not 'sdpa'"
    dynamic = _tiny("llama")
    dynamic.config.rope_parameters = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    assert unsupported_reason(dynamic) == "its RoPE (dynamic) depends on the sequence length"
    policy = nontrivial_policy(tiny_model_dir)
    tok = _tokenizer(tiny_model_dir)
    with pytest.raises(ValueError, match="CUDA graphs need a CUDA device"):
        MergedEngine(policy, tok, torch.float32, decode_mode="graphs")
    assert MergedEngine(policy, tok, torch.float32).static is None  # auto on a CPU: the eager loop
    assert MergedEngine(policy, tok, torch.float32, decode_mode="eager").static is None


def test_grouped_decode_attention_is_sdpa_over_the_repeated_heads() -> None:
    """One query position per row: the query heads of a key/value head attend as that head's positions, which is
    SDPA over ``repeat_kv``'s expanded heads to rounding, under a padding mask."""
    from transformers.integrations.sdpa_attention import repeat_kv

    from grpo_core.rollout.engines.graphs import _decode_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 8, 1, 16, generator=g), torch.randn(3, 2, 40, 16, generator=g), torch.randn(3, 2, 40, 16)
    mask = (torch.arange(40) < torch.tensor([[7], [40], [1]])).view(3, 1, 1, 40)
    out, _ = _decode_attention(None, q, k, v, mask, scaling=0.25)
    want = torch.nn.functional.scaled_dot_product_attention(
        q, repeat_kv(k, 4), repeat_kv(v, 4), attn_mask=mask, scale=0.25
    ).transpose(1, 2)
    assert out.shape == (3, 1, 8, 16)
    torch.testing.assert_close(out, want, atol=1e-6, rtol=1e-5)
